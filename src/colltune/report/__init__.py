"""Reports: the self-contained HTML report (html) and its pluggable sections (sections/)."""

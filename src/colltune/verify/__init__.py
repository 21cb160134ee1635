"""Stage 2, verify: statistics (stats), guideline verdicts (check), quality score, terminal tables, advice per violation."""

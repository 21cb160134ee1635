"""Stage 1, measure: the benchmark runner (bench) and the correctness driver front end (selftest)."""

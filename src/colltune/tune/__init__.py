"""Stage 3, tune: tuning profiles (profile), profiles from verdicts (tuner), validation runs, native library tuning files."""

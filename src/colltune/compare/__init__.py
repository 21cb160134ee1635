"""`colltune compare`: MPI libraries, machines or configurations side by side (docs/compare.md)."""

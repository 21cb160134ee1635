"""MPI libraries: discovery (libraries), building the C core per library (build), launch command lines (launch), the interposer environment of `colltune run` (runenv)."""

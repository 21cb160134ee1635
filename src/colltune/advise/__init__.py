"""`colltune advise`: one profiled run of an application, findings with predicted gains.

Modules, one concern each:
  profile_run  read the rank-N files libcolltune writes in profiling mode (COLLTUNE_PROFILE_RUN)
  symbols      call sites (return addresses) -> function and file:line (addr2line)
  collectives  finding 1: best portfolio member per (collective, size bin, nprocs) from the store
  eager        finding 2: point-to-point sizes vs the eager threshold read via MPI_T
  mapping      finding 3: oversubscription and binding
  topology     finding 3 continued: NUMA spread, device locality, rank 0 placement (from /sys)
  share        finding 4: time share in collectives and in waiting (is tuning worth it?)
  findings     the Finding type and the run of all strategies
  output       terminal summary and JSON
  verify       --verify: alternating runs, wall and in-situ medians, noise, verdict
"""

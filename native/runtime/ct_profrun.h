/*
 * Profiling mode (COLLTUNE_PROFILE_RUN=dir): what `colltune advise` learns from one run.
 *
 * Per rank, fixed-size tables filled without allocation on the call path and written at
 * MPI_Finalize to dir/rank-N (format in docs/advise.md):
 *   - collectives by (collective, call site, communicator size, log2 bytes): calls, total and max
 *     time, bytes; on a sample of calls a timed PMPI_Barrier before the call splits the time into
 *     waiting for late ranks and the collective's own cost;
 *   - point-to-point calls (generated wrappers, native/spec/p2p.toml) by (call, site, log2 bytes);
 *   - wall time MPI_Init..MPI_Finalize and the environment (library, MPI_T cvars, binding).
 * It composes with the other modes: it times ct_dispatch's work, whoever serves the call.
 */
#ifndef CT_PROFRUN_H
#define CT_PROFRUN_H

#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "ct_p2p_calls.h"

#define CT_PROFRUN_HIDDEN __attribute__((visibility("hidden")))

/* 1 while profiling: read by the p2p wrappers (same write-once-at-init rule as ct_active). */
extern CT_PROFRUN_HIDDEN unsigned char ct_p2p_on;
extern CT_PROFRUN_HIDDEN const char *const ct_p2p_names[CT_P2P_COUNT];

/* Monotonic nanoseconds (CLOCK_MONOTONIC: one clock for all ranks of a node). */
CT_PROFRUN_HIDDEN uint64_t ct_profrun_ns(void);
/* The call path's clock: TSC ticks where the kernel trusts the TSC, else ns (profrun.c). */
CT_PROFRUN_HIDDEN uint64_t ct_profrun_ticks(void);
CT_PROFRUN_HIDDEN double ct_profrun_ns_per_tick(void);   /* the rate since MPI_Init */
/* count * size(type), 0 for a null or invalid type (the library reports that error itself). */
CT_PROFRUN_HIDDEN int64_t ct_profrun_bytes(int count, MPI_Datatype type);
/* `ticks`: a duration of the call path's clock (ct_profrun_ticks). */
CT_PROFRUN_HIDDEN void ct_profrun_p2p(ct_p2p_call call, const void *site, int64_t bytes,
                                      uint64_t ticks);

/* The node's topology from /sys (NUMA nodes, device locality, isolated cores), topo.c. */
CT_PROFRUN_HIDDEN void ct_topo_write(FILE *out);

/* Hooks: MPI_Init, ct_dispatch, MPI_Finalize. At MPI_Init ct_profrun_prepare fills its slots of
 * init.c's settings agreement (one PMPI_Allreduce with MPI_MAX for every mode); ct_profrun_start
 * reads the agreed values (after the modes are installed). */
enum { CT_PR_SAMPLE, CT_PR_SAMPLE_NOT, CT_PR_BUDGET, CT_PR_BUDGET_NOT, CT_PROFRUN_SLOTS };
CT_PROFRUN_HIDDEN void ct_profrun_prepare(uint64_t slots[CT_PROFRUN_SLOTS]);
CT_PROFRUN_HIDDEN void ct_profrun_start(const uint64_t agreed[CT_PROFRUN_SLOTS], int rank,
                                        int nprocs);
struct ct_call;
CT_PROFRUN_HIDDEN int ct_profrun_dispatch(const struct ct_call *call);
CT_PROFRUN_HIDDEN void ct_profrun_finish(void);

/* The call site of the collective being dispatched: set by the generated wrapper. */
/* initial-exec: a plain %fs access on every intercepted call instead of __tls_get_addr
 * (libcolltune is preloaded or linked, so its TLS is in the static block). */
extern CT_PROFRUN_HIDDEN _Thread_local const void *ct_profrun_site
    __attribute__((tls_model("initial-exec")));
/* Set by the Fortran wrappers around their call of the C wrapper: the application's call site
 * (the C wrapper's return address would be colltune's own ct_f_* frame). NULL otherwise. */
extern CT_PROFRUN_HIDDEN _Thread_local const void *ct_profrun_caller
    __attribute__((tls_model("initial-exec")));
extern CT_PROFRUN_HIDDEN _Thread_local int ct_profrun_inside
    __attribute__((tls_model("initial-exec")));
extern CT_PROFRUN_HIDDEN unsigned char ct_profrun_on;

/* ---- per communicator (profcomm.c): sampling schedule and budget, call patterns ---------- */
#define CT_PR_BARRIER CT_NUM_COLLECTIVES   /* MPI_Barrier's kind in the collective table */
enum { CT_PAT_REDUCE_BCAST, CT_PAT_SMALL_REDUCTIONS, CT_PAT_BARRIER_SYNC, CT_PAT_COUNT };
typedef struct ct_comm_state ct_comm_state;
/* This thread's intercepted MPI calls, numbered (1, 2, ...): "directly after" for patterns. */
extern CT_PROFRUN_HIDDEN _Thread_local uint64_t ct_profrun_seq
    __attribute__((tls_model("initial-exec")));
CT_PROFRUN_HIDDEN int ct_profcomm_prepare(void);                 /* the keyval; 0: failed */
CT_PROFRUN_HIDDEN void ct_profcomm_start(uint64_t every, uint64_t budget_ppm, uint64_t ns0,
                                         int mt);
CT_PROFRUN_HIDDEN void ct_profcomm_finish(void);
CT_PROFRUN_HIDDEN ct_comm_state *ct_profcomm_state(MPI_Comm comm);   /* NULL: none */
CT_PROFRUN_HIDDEN int ct_profcomm_nprocs(const ct_comm_state *st);
CT_PROFRUN_HIDDEN uint64_t ct_profcomm_gap(uint64_t period, uint64_t k);
/* Counts the call; on a sampled one synchronises first (1, *wait_ns = its time). */
CT_PROFRUN_HIDDEN int ct_profcomm_sample(ct_comm_state *st, MPI_Comm comm, uint64_t *wait_ns);
/* After a successful call: patterns it completes, then it becomes the previous call. */
CT_PROFRUN_HIDDEN void ct_profcomm_after(ct_comm_state *st, int kind, const void *site,
                                         const struct ct_call *call, int64_t bytes,
                                         uint64_t seq);
CT_PROFRUN_HIDDEN void ct_profcomm_write(FILE *out, double ns_per_tick);
CT_PROFRUN_HIDDEN int ct_profrun_barrier(MPI_Comm comm, const void *site);

/* The one line in ct_dispatch: time the rest of the dispatch when profiling (not re-entered). */
#define CT_PROFRUN_HOOK(call)                                                                   \
    if (__builtin_expect(ct_profrun_on && !ct_profrun_inside, 0))                              \
    return ct_profrun_dispatch(call)

#endif /* CT_PROFRUN_H */

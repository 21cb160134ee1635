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

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
CT_PROFRUN_HIDDEN void ct_profrun_clock_start(void);       /* MPI_Init (profclock.c) */
extern CT_PROFRUN_HIDDEN uint64_t ct_profrun_ns_init;       /* ct_profrun_ns() then */
/* count * size(type), 0 for a null or invalid type (the library reports that error itself). */
CT_PROFRUN_HIDDEN int64_t ct_profrun_bytes(int count, MPI_Datatype type);
/* `ticks`: a duration of the call path's clock (ct_profrun_ticks). */
CT_PROFRUN_HIDDEN void ct_profrun_p2p(ct_p2p_call call, const void *site, int64_t bytes,
                                      uint64_t ticks);

/* The node's topology from /sys (NUMA nodes, device locality, isolated cores), topo.c. */
CT_PROFRUN_HIDDEN void ct_topo_write(FILE *out);
/* The run's environment (profenv.c): the executable mappings at MPI_Init, the rest written at
 * MPI_Finalize (header, library, host, binding, control variables, topology). */
CT_PROFRUN_HIDDEN void ct_profenv_read_maps(void);
CT_PROFRUN_HIDDEN void ct_profenv_write(FILE *out, int rank, int nprocs, uint64_t wall,
                                        unsigned long every, uint64_t budget_ppm);

/* Hooks: MPI_Init, ct_dispatch, MPI_Finalize. At MPI_Init ct_profrun_prepare fills its slots of
 * init.c's settings agreement (one PMPI_Allreduce with MPI_MAX for every mode); ct_profrun_start
 * reads the agreed values (after the modes are installed). */
enum { CT_PR_SAMPLE, CT_PR_SAMPLE_NOT, CT_PR_BUDGET, CT_PR_BUDGET_NOT, CT_PROFRUN_SLOTS };
CT_PROFRUN_HIDDEN void ct_profrun_prepare(uint64_t slots[CT_PROFRUN_SLOTS]);
CT_PROFRUN_HIDDEN void ct_profrun_start(const uint64_t agreed[CT_PROFRUN_SLOTS], int rank,
                                        int nprocs);
struct ct_call;
CT_PROFRUN_HIDDEN int ct_profrun_dispatch(const struct ct_call *call);
/* 1 if a mode other than profiling serves collective `coll` (ct_active as the modes set it). */
CT_PROFRUN_HIDDEN int ct_profrun_served(int coll);
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

/* ---- fixed open-addressing tables (profrun.c's points, profcomm.c's patterns) -------------- */
/* A slot is `atomic_int state` (0 empty, 1 being claimed, 2 ready) and, `key_at` bytes in, its
 * key of `key_bytes` (a struct without padding: compared and copied as bytes); every other field
 * starts at zero. The slot of `key` in a table of `n` (a power of two) slots of `stride` bytes,
 * probing from hash `h`: an empty slot is claimed by CAS and gets the key before it is
 * published; a slot being claimed by another thread is waited for (a few stores). NULL when the
 * table is full. No lock: MPI_THREAD_MULTIPLE safe. Inline: the sizes are constants. */
static inline void *ct_table_probe(void *table, size_t n, size_t stride, uint64_t h,
                                   size_t key_at, const void *key, size_t key_bytes)
{
    for (size_t probe = 0; probe < n; probe++) {
        char *slot = (char *)table + ((h + probe) & (n - 1)) * stride;
        atomic_int *state = (atomic_int *)slot;
        int st = atomic_load_explicit(state, memory_order_acquire);
        if (st == 0) {
            int expected = 0;
            if (atomic_compare_exchange_strong_explicit(state, &expected, 1, memory_order_acquire,
                                                        memory_order_relaxed)) {
                memcpy(slot + key_at, key, key_bytes);
                atomic_store_explicit(state, 2, memory_order_release);
                return slot;
            }
            st = expected;
        }
        while (st == 1)
            st = atomic_load_explicit(state, memory_order_acquire);
        if (memcmp(slot + key_at, key, key_bytes) == 0)
            return slot;
    }
    return NULL;
}

/* ---- per communicator (profcomm.c): sampling schedule and budget, call patterns ---------- */
#define CT_PR_BARRIER CT_NUM_COLLECTIVES   /* MPI_Barrier's kind in the collective table */
enum { CT_PAT_REDUCE_BCAST, CT_PAT_SMALL_REDUCTIONS, CT_PAT_BARRIER_SYNC, CT_PAT_COUNT };

/* A call as patterns compare it with the next one on its communicator. */
typedef struct ct_fingerprint {
    const void *site;
    int kind, root, count;
    MPI_Datatype type;
    MPI_Op op;
    const void *in;             /* the reduction's input buffer (its recvbuf when in place) */
    const void *out;            /* where this rank has the result, NULL where it has none */
    int64_t bytes;
} ct_fingerprint;

/* A communicator's profiling state: a keyval attribute, allocated at its first profiled call.
 * Defined here so that the call path reads its call counter and size inline. The previous
 * collective call's fingerprint is a memoised call's (profrun.c) or `own`, identified by an id
 * that changes whenever the fingerprint there is rewritten: valid while *prev_idp == prev_id. */
typedef struct __attribute__((aligned(64))) ct_pcomm {
    /* what every call reads and writes: one cache line */
    uint64_t calls;             /* collective calls on it so far: the same number on every rank */
    uint64_t next_sample;       /* the number of the next sampled call; UINT64_MAX: none */
    const ct_fingerprint *prev;
    const uint64_t *prev_idp;
    uint64_t prev_id, prev_seq; /* prev_seq: its number in the thread's sequence of calls */
    int nprocs, rank;
    int inter;
    uint64_t period, samples;
    uint64_t last_sync_ns;      /* this rank's previous synchronisation here, 0: none yet */
    uint64_t own_id;
    ct_fingerprint own;         /* a call that is not memoised */
} ct_pcomm;

/* A memoised call's pattern with the call it last followed directly (profcomm.c): `after` is
 * that call's fingerprint id (0: none yet), `pattern` the one their arguments other than the
 * buffers make (-1: none), `slot` its counter; the buffers' part is checked on every call
 * (ct_profcomm_buffers_fit: applications reduce into other buffers from call to call). */
struct ct_pat_slot;
typedef struct ct_pat_memo {
    uint64_t after;
    struct ct_pat_slot *slot;
    int pattern;
} ct_pat_memo;

/* This thread's last communicator and its state, valid while `generation` is the global one
 * (bumped when any state is freed: a freed communicator's handle may be reused). */
typedef struct ct_pcomm_cache {
    MPI_Comm comm;
    ct_pcomm *state;
    unsigned generation;
} ct_pcomm_cache;
extern CT_PROFRUN_HIDDEN _Thread_local ct_pcomm_cache ct_profcomm_cache
    __attribute__((tls_model("initial-exec")));
extern CT_PROFRUN_HIDDEN atomic_uint ct_profcomm_generation;

/* This thread's intercepted MPI calls, numbered (1, 2, ...): "directly after" for patterns. */
extern CT_PROFRUN_HIDDEN _Thread_local uint64_t ct_profrun_seq
    __attribute__((tls_model("initial-exec")));
CT_PROFRUN_HIDDEN int ct_profcomm_prepare(void);                 /* the keyval; 0: failed */
CT_PROFRUN_HIDDEN void ct_profcomm_start(uint64_t every, uint64_t budget_ppm, uint64_t ns0,
                                         int mt);
CT_PROFRUN_HIDDEN void ct_profcomm_finish(void);
CT_PROFRUN_HIDDEN ct_pcomm *ct_profcomm_lookup(MPI_Comm comm);   /* NULL: none */
CT_PROFRUN_HIDDEN uint64_t ct_profcomm_gap(uint64_t period, uint64_t k);

/* The communicator's state (NULL: none): one compare for a loop's calls on one communicator. */
static inline ct_pcomm *ct_profcomm_state(MPI_Comm comm)
{
    if (__builtin_expect(comm == ct_profcomm_cache.comm
                         && atomic_load_explicit(&ct_profcomm_generation, memory_order_relaxed)
                                == ct_profcomm_cache.generation, 1))
        return ct_profcomm_cache.state;
    return ct_profcomm_lookup(comm);
}

/* Counts the call; 1 if it is one to sample (then ct_profcomm_sync). */
static inline int ct_profcomm_due(ct_pcomm *st)
{
    return __builtin_expect(st->calls++ == st->next_sample, 0);
}

/* A sampled call: the timed synchronisation before it (1, *wait_ns = its time; 0: failed). */
CT_PROFRUN_HIDDEN int ct_profcomm_sync(ct_pcomm *st, MPI_Comm comm, uint64_t *wait_ns);
/* After a successful call: its fingerprint is written to *fp (a memo entry's, else NULL: the
 * state's own) under a new id in *idp; the pattern it completes with the previous call is
 * counted (and cached in *pm where given); then it is the previous call. */
CT_PROFRUN_HIDDEN void ct_profcomm_after(ct_pcomm *st, ct_fingerprint *fp, uint64_t *idp,
                                         ct_pat_memo *pm, int kind, const void *site,
                                         const struct ct_call *call, int64_t bytes, uint64_t seq);
/* The same for a memoised call, whose fingerprint (id *idp) is already in *fp: a pair it
 * completes with the previous call by the pattern cached in *pm is counted in *pending (the
 * caller's, added to pm->slot later; added here before the verdict is taken again). */
CT_PROFRUN_HIDDEN void ct_profcomm_pattern(ct_pcomm *st, const ct_fingerprint *fp,
                                           ct_pat_memo *pm, int64_t bytes);
/* `pairs` pairs of `bytes` bytes (the second calls', summed) into a pattern's counter. */
CT_PROFRUN_HIDDEN void ct_pat_bump(struct ct_pat_slot *slot, uint64_t pairs, uint64_t bytes);

CT_PROFRUN_HIDDEN int ct_profcomm_buffers_fit(const ct_pcomm *st, int pattern,
                                               const ct_fingerprint *prev,
                                               const ct_fingerprint *cur);
/* A call's buffers in its fingerprint (where its result is, what it reads). */
CT_PROFRUN_HIDDEN void ct_fingerprint_buffers(ct_fingerprint *f, const ct_pcomm *st, int kind,
                                              const struct ct_call *call);

static inline void ct_profcomm_repeat(ct_pcomm *st, const ct_fingerprint *fp,
                                      const uint64_t *idp, ct_pat_memo *pm, uint64_t *pending,
                                      int64_t bytes, uint64_t seq)
{
    if (st->prev_seq + 1 == seq && st->prev != NULL && *st->prev_idp == st->prev_id) {
        if (__builtin_expect(pm->after != st->prev_id, 0)) {   /* first time after this call */
            if (*pending > 0 && pm->slot != NULL)
                ct_pat_bump(pm->slot, *pending, *pending * (uint64_t)bytes);
            *pending = 0;
            ct_profcomm_pattern(st, fp, pm, bytes);
        }
        if (pm->pattern >= 0 && ct_profcomm_buffers_fit(st, pm->pattern, st->prev, fp))
            (*pending)++;
    }
    st->prev = fp;
    st->prev_idp = idp;
    st->prev_id = *idp;
    st->prev_seq = seq;
}

CT_PROFRUN_HIDDEN void ct_profcomm_write(FILE *out, double ns_per_tick);
CT_PROFRUN_HIDDEN int ct_profrun_barrier(MPI_Comm comm, const void *site);

/* The one line in ct_dispatch: time the rest of the dispatch when profiling (not re-entered). */
#define CT_PROFRUN_HOOK(call)                                                                   \
    if (__builtin_expect(ct_profrun_on && !ct_profrun_inside, 0))                              \
    return ct_profrun_dispatch(call)

#endif /* CT_PROFRUN_H */

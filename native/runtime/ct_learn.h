/*
 * What the learning mode's decisions (learn.c) and its tracing (trace.c) share: the state of a
 * communicator and the trace's bookkeeping of it.
 */
#ifndef CT_LEARN_H
#define CT_LEARN_H

#include "ct_tls.h"
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "ct_runtime.h"

#define CT_NO_SLOT 0xFFFFu   /* communicator beyond the file's table: its calls are not recorded */

typedef struct ct_comm_state {
    uint32_t id;
    int inter;
    int size, rank;                 /* intra-communicators: the erroneous-call check's facts */
    uint16_t slot;                  /* traced ranks: index in the trace's communicator table */
    uint32_t np_cell;               /* the nodes and ppn part of a cube index */
    uint32_t warm_left;             /* the library's warm-up: counted calls still to pass (warmup.c) */
    /* the short path's cubes by port: learn.c's ct_live, then ct_spent from the call that
     * spends the budget on (relaxed, as the counters) */
    const uint8_t *const *_Atomic codes;
    /* Collectives on one communicator are never concurrent (MPI forbids it), so relaxed loads
     * and stores suffice; atomics only keep the accesses well-defined across threads. */
    atomic_ullong calls, explored;
    atomic_ullong recorded;         /* traced ranks: calls of `calls` that got a record */
    void *lib;                      /* communicators of library members (libalg_online.c) */
    atomic_uint cell_explored[];    /* [collective * nbins[0] + size bin], at most ct_cell_budget */
} ct_comm_state;

/* The local clock of traces: CLOCK_MONOTONIC in nanoseconds, the clock MPI_Wtime reads in Open
 * MPI and MPICH (local, not synchronized across nodes), read directly: MPICH's PMPI_Wtime adds
 * ~60 instructions of layers around it, twice per traced call. */
static inline uint64_t ct_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* COLLTUNE_SELECT_CHECK=1 (learn.c). */
extern CT_HIDDEN int ct_checking;

/* 1 while a call must take the learning mode's full path: this rank checks, or its trace is
 * open. The trace closes at its record or time bound, and from then on the rank's calls cost
 * what an untraced rank's cost. Relaxed loads: a call that sees the flag late is one more call
 * not recorded. */
extern CT_HIDDEN atomic_int ct_recording;

/* The record of the call this thread is deciding (traced ranks only), completed after the call. */
extern CT_HIDDEN _Thread_local ct_trace_record ct_pending CT_TLS_MODEL;
/* The state of the communicator of ct_pending, for its `recorded` counter. */
extern CT_HIDDEN _Thread_local ct_comm_state *ct_pending_state
    CT_TLS_MODEL;

/* Tracing (trace.c). ct_trace_setup reads COLLTUNE_TRACE_* at MPI_Init; ct_trace_active says
 * whether this rank records (its buffer exists, open or closed). */
CT_HIDDEN void ct_trace_setup(int rank, int size, uint64_t t0);
extern CT_HIDDEN ct_trace_record *ct_trace;
static inline int ct_trace_active(void)
{
    return ct_trace != NULL;
}
/* A new communicator's index in the trace's communicator table, or CT_NO_SLOT; its calls not
 * recorded are counted from the state's counters (`calls - recorded`) when the trace is written
 * or the communicator freed (ct_trace_comm_gone). */
CT_HIDDEN uint16_t ct_trace_slot(ct_comm_state *s, uint32_t size, uint32_t nodes, uint32_t ppn);
CT_HIDDEN void ct_trace_comm_gone(ct_comm_state *s);
/* A started call's record (learn.c, ct_learn_started), in call order, its reward still missing:
 * its index + 1, 0 if not recorded. */
CT_HIDDEN uint64_t ct_trace_started(const ct_decision *d, uint64_t start, uint64_t end);
/* MPI_Finalize: write DIR/rank-N.cttrace (and warn about lost records); free everything. */
CT_HIDDEN void ct_trace_finish(uint64_t seed, uint64_t table_hash);
CT_HIDDEN void ct_trace_free(void);

#endif /* CT_LEARN_H */

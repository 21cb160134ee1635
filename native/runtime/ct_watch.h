/*
 * Watching every collective function (watch.c, requests.c): the counting and profiling modes
 * see the functions the decision point does not serve (nonblocking MPI_I*, persistent *_init,
 * the neighborhood collectives; ct_form_wrappers.c) and the requests they make, up to their
 * completion in the Wait/Test family, where the time spent is attributed to the collective.
 *
 * ct_watch has CT_WATCH_SEE while counting (COLLTUNE_VERBOSE=1) or profiling
 * (COLLTUNE_PROFILE_RUN), CT_WATCH_LEARN while the learning mode follows the requests of the
 * nonblocking calls it decides on a tracing rank (their reward ends in the Wait/Test that
 * completes them): the watched wrappers and MPI_Start/Wait/Test... test it and pass straight to
 * PMPI_* when it is 0 (the Test family: through their countdowns, ct_polls_watch_written).
 * Written only inside MPI_Init and MPI_Finalize, like ct_active.
 */
#ifndef CT_WATCH_H
#define CT_WATCH_H

#include <stdint.h>

#include <mpi.h>

#include "ct_functions.h"
#include "ct_profrun.h"
#include "ct_runtime.h"

/* ct_watch: ct_hot.h's (a byte of the point-to-point calls' hot line; the assembly stubs test
 * it as ct_p2p_line+1) */
/* CT_WATCH_MEMO: profiling below MPI_THREAD_MULTIPLE (ct_profrun_on && !ct_profrun_mt, set and
 * cleared with ct_profrun_on, profrun.c), for the Wait family's straight path (requests.c), which
 * then reads the line ct_watch and the request map's generation are on, not ct_profrun_on's too. */
enum { CT_WATCH_SEE = 1, CT_WATCH_LEARN = 2, CT_WATCH_MEMO = 4 };
/* The Test family's wrappers test their countdown alone, which stands for ct_watch too
 * (requests.c, ct_poll_passes): called once MPI_Init has set ct_watch (ct_modes_watch_started,
 * after the modes' and the profiling mode's writes) and after each later write (profiling's
 * end, MPI_Finalize's), it puts the countdowns idle when ct_watch is 0 and shut when it is not
 * and the polls' light path is not open. */
CT_HIDDEN void ct_polls_watch_written(void);
/* What the nonblocking wrappers of the rows the decision point serves (MPI_I<coll> of a row
 * with dispatch) do besides passing through: CT_START_SEE as ct_watch, CT_START_SERVE where a
 * member of the collective's nonblocking form is forced (modes.c, ct_dispatch_started). One
 * byte, so that their pass-through stays one test; written at MPI_Init and MPI_Finalize only. */
extern CT_HIDDEN unsigned char ct_start_watch;
enum { CT_START_SEE = 1, CT_START_SERVE = 2 };

/* The application's call site: a Fortran wrapper's caller where one is set. */
static inline const void *ct_watch_site(const void *ret)
{
    return ct_profrun_caller != NULL ? ct_profrun_caller : ret;
}

/* The profiling mode's clock while profiling, else 0 (counting needs no time). */
static inline uint64_t ct_watch_clock(void)
{
    return ct_profrun_on ? ct_profrun_ticks() : 0;
}

/* Sizes for the `bytes` rules; -1 where a size cannot be taken. */
CT_HIDDEN int64_t ct_watch_size(MPI_Datatype type);
CT_HIDDEN int64_t ct_watch_comm_size(MPI_Comm comm);
CT_HIDDEN int64_t ct_watch_sum(const int *counts, MPI_Comm comm);
#if MPI_VERSION >= 4
CT_HIDDEN int64_t ct_watch_sum_large(const MPI_Count *counts, MPI_Comm comm);
#endif

/* The bytes a call of an irregular (v/w) collective moves on this rank as the counting and
 * profiling modes record them (never a decision: those use the row's uniform `bytes`, 0 for
 * Gatherv, Scatterv, Alltoallv and Alltoallw, none for the neighborhood v/w rows): the counts
 * significant on this rank times their datatypes' sizes. Gatherv's root: sum(recvcounts) x
 * size(recvtype), its other ranks sendcount x size(sendtype); Scatterv the mirror image;
 * Alltoallv: sum(recvcounts) x size(recvtype); Alltoallw: sum of recvcounts[i] x
 * size(recvtypes[i]) (the receive side, which MPI_IN_PLACE leaves significant; an
 * inter-communicator's over the remote group); Neighbor_alltoallv and Neighbor_alltoallw: what
 * this rank sends, over its out-neighbours (2 x dimensions on a Cartesian topology, the graph's
 * neighbours, a distributed graph's out-degree), as the other neighborhood rows count what it
 * sends. Gatherv's and Scatterv's on an inter-communicator: 0, the row's figure. -1 where a size
 * cannot be taken. Every form and binding: the arrays are int (C), MPI_Count (`large`, the _c
 * bindings) or MPI_Fint with Fortran datatype handles (`fortran`). */
enum ct_vw_kind {
    CT_VW_GATHERV = 1, CT_VW_SCATTERV, CT_VW_ALLTOALLV, CT_VW_ALLTOALLW,
    CT_VW_NEIGHBOR_ALLTOALLV, CT_VW_NEIGHBOR_ALLTOALLW
};
typedef struct ct_vw {
    int kind;                            /* enum ct_vw_kind */
    MPI_Comm comm;
    int root;
    int64_t sendcount, recvcount;
    const void *sendcounts, *recvcounts;
    MPI_Datatype sendtype, recvtype;
    const void *sendtypes, *recvtypes;   /* MPI_Datatype arrays, or MPI_Fint (fortran) */
    unsigned char large, fortran;
} ct_vw;
CT_HIDDEN int64_t ct_watch_vw_bytes(const ct_vw *v);
/* A served blocking call's bytes as the counting and profiling modes record them: the v/w
 * rows' by ct_watch_vw_bytes, every other collective's colltune_call_counted_bytes. */
CT_HIDDEN int64_t ct_watch_call_bytes(const ct_call *call);

/* The product of n factors, -1 if any is negative (unknown). */
static inline int64_t ct_watch_product(const int64_t *factors, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (factors[i] < 0)
            return -1;
        p *= factors[i];
    }
    return p;
}

/* A watched function's call, after the library ran it (t0: ct_watch_clock before it): counted;
 * while profiling, recorded at (function, site, communicator size, log2 bytes); the request it
 * made (nonblocking, persistent; NULL: none) is followed to its completion. */
CT_HIDDEN void ct_fn_seen(int fn, const void *site, MPI_Comm comm, int64_t bytes, uint64_t t0,
                          const MPI_Request *request);
/* A large-count binding the decision point serves (gen_wrappers.py), counted by function; its
 * bytes (-1: unknown) also go to its collective's, which the int binding's are told from. */
CT_HIDDEN void ct_fn_note(int fn, int64_t bytes);
/* A served collective's bytes, per collective (modes.c, while counting). */
CT_HIDDEN void ct_fn_coll_bytes(int coll, int64_t bytes);
/* Operations of a followed request started (MPI_Start) and completed (Wait/Test). */
CT_HIDDEN void ct_req_count_start(int fn);
CT_HIDDEN void ct_req_count_completion(int fn);
/* The counting table's "functions" section (count.c prints it after the calls). */
CT_HIDDEN void ct_fn_print(FILE *out);

/* ---- requests (requests.c) ---------------------------------------------------------------- */
/* A collective request made by a watched function: followed until it completes (nonblocking) or
 * is freed (persistent). `point`: the profiling mode's point of the call, NULL when not
 * profiling. */
struct ct_point;
CT_HIDDEN void ct_req_add(MPI_Request request, int fn, struct ct_point *point, int persistent,
                          uint64_t start);
CT_HIDDEN void ct_req_clear(void);   /* MPI_Finalize */
/* A request of a nonblocking call (a persistent init) the learning mode decided, whose trace
 * record (index + 1) gets its reward at completion: `own_ns` the start's time (0: a persistent
 * request's MPI_Start gives it), to which the Wait/Test calls given this request alone add
 * theirs (ct_trace_completed; a persistent request's record: the mean over its operations
 * completed alone). */
CT_HIDDEN void ct_req_learned(MPI_Request request, int fn, uint64_t record, uint64_t own_ns);

/* The requests a Wait/Test call is given, before it runs: which are followed collective ones. */
#define CT_REQ_BATCH 64
typedef struct ct_reqwatch {
    int n;                          /* followed requests among them */
    int total;                      /* active requests given (the time is shared among them) */
    int at[CT_REQ_BATCH];           /* their indices in the caller's array */
    uint64_t key[CT_REQ_BATCH];     /* their handles */
    uint64_t t0, t1;                /* the clock before the call and after it (ct_req_end) */
    uint64_t ns0;                   /* ct_now() before the call if a learned request is given */
} ct_reqwatch;
/* Fills *w from the `count` requests (C handles); returns w->n. */
CT_HIDDEN int ct_req_begin(ct_reqwatch *w, int count, const MPI_Request *requests);
/* After the call: the time since ct_req_begin is shared among the active requests given; the
 * followed ones that completed are recorded. Completed: all (`all`), the one at `index`, or
 * those listed in `list` (n_list entries). Returns the share of the time of the requests that
 * are not followed collective ones (the point-to-point part), in ticks. */
CT_HIDDEN uint64_t ct_req_end(ct_reqwatch *w, int all, int index, const int *list, int n_list);
/* A Wait/Test call on the watched path, from before the library's call to after it
 * (requests.c; a repetition at one site takes a memo entry, `struct ct_poll`). */
struct ct_poll;
typedef struct ct_watchcall {
    struct ct_poll *memo;         /* the entry it repeats, NULL: the full path */
    uint64_t t_in;                /* the clock at entry where it samples the own time, else 0 */
    ct_p2p_call call;
    const void *site, *anchor;    /* anchor: an address in the wrapper's frame (the chain's) */
    const void *chain;            /* its chain (profchain.c), NULL: not looked up yet */
    unsigned gen;                 /* the map's generation before the call (full path) */
    int none_followed;            /* no request was followed before the call (full path) */
    int sampled;                  /* a poll the countdown sampled off the light path */
    int light;                    /* a Fortran poll on the light path (ct_watch_enter) */
    ct_reqwatch w;                /* the full path's; a repetition's t0 (0: not timed) and t1 */
} ct_watchcall;
/* The Fortran wrappers' Wait/Test family (gen_fortran.py), around the library's call, with the
 * handles translated to C: the C wrappers' path (memo, own time, point-to-point part). `done`:
 * the call completed a request; which: all (`all`), the one at `index`, those in `list`. */
CT_HIDDEN void ct_watch_enter(ct_watchcall *c, ct_p2p_call call, const void *site,
                              const void *anchor, int count, const MPI_Request *requests);
CT_HIDDEN void ct_watch_leave(ct_watchcall *c, int count, const MPI_Request *requests, int done,
                              int all, int index, const int *list, int n_list);
/* MPI_Start / MPI_Startall of followed persistent requests, from `t0` (the watch clock); a
 * learned one's operation starts its reward with `own_ns`, the start's own time, if `alone`. */
CT_HIDDEN void ct_req_started(MPI_Request request, uint64_t t0, uint64_t own_ns, int alone);
CT_HIDDEN void ct_req_freed(MPI_Request request);

#endif /* CT_WATCH_H */

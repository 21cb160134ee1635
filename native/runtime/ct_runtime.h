/*
 * The interposer's runtime: modes, decision point, counting (libcolltune.so only).
 *
 * The generated wrappers (ct_wrappers.c) test one byte per collective, `ct_active[coll]`, and
 * call PMPI_* directly when it is 0: that is the whole pass-through cost. Otherwise they call
 * ct_dispatch, or while profiling the profiling mode's call path (ct_profrun.h), which calls
 * ct_dispatch itself. The byte is written
 * only inside MPI_Init/MPI_Init_thread (before the application can call a collective) and read
 * afterwards, so it needs no atomics; that is why it is process-global.
 */
#ifndef CT_RUNTIME_H
#define CT_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "colltune.h"
#include "ct_catalog.h"
#include "ct_hot.h"
#include "ct_formats.h"
#include "ct_functions.h"
#include "ct_proof.h"

#define CT_HIDDEN __attribute__((visibility("hidden")))
#define CT_LIKELY(x) __builtin_expect(!!(x), 1)
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Who took a decision, in the order the decision point asks them. */
typedef enum ct_mode {
    CT_MODE_NONE = 0,   /* no mode had an opinion: the library serves the call */
    CT_MODE_FORCE,      /* COLLTUNE_FORCE */
    CT_MODE_PROFILE,    /* COLLTUNE_PROFILE */
    CT_MODE_EXPLORE,    /* learning mode, a drawn call (COLLTUNE_SELECT / COLLTUNE_TRACE_DIR) */
    CT_MODE_EXPLOIT,    /* learning mode, the cell's best member or the table's fixed choice */
    CT_MODE_COUNT
} ct_mode;

/* ct_trace_record, one traced call: native/spec/formats.toml via ct_formats.h. */

/* The outcome of the decision point for one call. */
typedef struct ct_decision {
    int variant;              /* ct_var_id to invoke, or -1: the library serves the call */
    int chosen;               /* the variant the mode asked for (-1: none or "library") */
    ct_mode mode;             /* which mode decided */
    colltune_reason reason;   /* why `chosen` could not serve, or COLLTUNE_APPLICABLE */
} ct_decision;

/* ct_active[coll]: 1 where some mode (or counting) wants to see calls of that collective; the
 * first bytes of the collectives' hot line (ct_hot.h). */

/* Decide who serves `call`. Pure function of the call's uniform arguments, the communicator
 * size and the settings (identical on all ranks, checked at MPI_Init): every rank of the
 * communicator gets the same answer. */
CT_HIDDEN ct_decision ct_decide(const ct_call *call);

/* Decide, run the variant or the library, count; returns the MPI error code of whoever ran. */
CT_HIDDEN int ct_dispatch(const ct_call *call);
/* The nonblocking call of a served row (ct_form_wrappers.c) while a member of its nonblocking
 * or persistent form is forced (ct_start_watch, ct_watch.h): started by that member or by the
 * library. */
CT_HIDDEN int ct_dispatch_started(const ct_call *call, MPI_Request *request);
/* The same for the persistent call (MPI_<Coll>_init): the request initialized by the member of
 * the persistent form or by the library; its MPI_Start/MPI_Startall are the library's. */
CT_HIDDEN int ct_dispatch_init(const ct_call *call, MPI_Info info, MPI_Request *request);
/* MPI_Init, after every mode is on: ct_start_watch from ct_watch and the forced members. */
CT_HIDDEN void ct_modes_watch_started(void);

/* Count a call that the wrapper sent to the library without a decision (e.g. a large-count call
 * whose counts do not fit an int). */
CT_HIDDEN void ct_count_passthrough(int coll, colltune_reason reason);

#if MPI_VERSION >= 4
/* Large-count bindings (large.c). Whether a _c call is served is decided from counts times
 * datatype sizes, which the type matching rules make identical on all ranks. */
/* 1 if 0 < count * size(type) <= INT_MAX. */
CT_HIDDEN int ct_fits(MPI_Count count, MPI_Datatype type);
/* `count` as an int where it fits, else 0 (only ignored arguments can be out of range). */
CT_HIDDEN int ct_narrow(MPI_Count count);
/* COLLTUNE_APPLICABLE and the caller's rank on an intra-communicator, else why not. */
CT_HIDDEN colltune_reason ct_large_comm(MPI_Comm comm, int *rank);
/* 1 if 0 < sum(counts) * size(type) <= INT_MAX; then copies the n counts into `small`. */
CT_HIDDEN int ct_fits_counts(const MPI_Count *counts, int n, MPI_Datatype type, int *small);
#endif

/* Settings and modes (modes.c). The forced choice of a collective: CT_FORCE_UNSET (none),
 * CT_FORCE_LIBRARY, a ct_var_id or a library member's id (>= CT_LIB_BASE). Slot
 * form * CT_NUM_COLLECTIVES + c is collective c's call of that form (enum ct_form): the blocking
 * call, MPI_I<coll> and MPI_<Coll>_init, the last two forced only on a library member of their
 * form (`lib:<coll>:<alg>#nonblocking`, `...#persistent`). */
#define CT_FORCE_UNSET (-2)
#define CT_FORCE_LIBRARY (-1)
#define CT_FORCE_SLOTS (3 * CT_NUM_COLLECTIVES)

/* Parse COLLTUNE_FORCE (library members must be registered first: ct_libalg_setup). Returns 0,
 * or -1 with a message naming the valid choices. */
CT_HIDDEN int ct_force_parse(const char *text, int force[CT_FORCE_SLOTS], char *err,
                             size_t errlen);

/* Read a bool setting ("1", "yes", "true", "on" / "0", "no", "false", "off", empty). Returns 0,
 * or -1 if the value is none of these. */
CT_HIDDEN int ct_env_bool(const char *name, int fallback, int *value);

/* Rank 0: warn once that a library's descriptor-based mpi_f08 bindings are not seen
 * (fortran_f08.c). */
CT_HIDDEN void ct_f08_check(int rank);

/* Rank 0: warn once about COLLTUNE_* variables that settings.toml does not declare. */
CT_HIDDEN void ct_warn_unknown_settings(void);

/* Install the modes (called once at MPI_Init, after the cross-rank checks). */
struct ct_profile;
CT_HIDDEN void ct_modes_install(const int force[CT_FORCE_SLOTS], struct ct_profile *profile,
                                int learning, int counting);
CT_HIDDEN void ct_modes_clear(void);
/* Each communicator's uniform node layout for the profile's layout blocks (commlayout.c):
 * (nodes, ppn), or (0, 0) when it has none; computed collectively at the communicator's first
 * call of a collective that has layout blocks. start/stop at MPI_Init/MPI_Finalize. */
CT_HIDDEN void ct_commlayout_start(void);
CT_HIDDEN void ct_commlayout_stop(void);
CT_HIDDEN void ct_commlayout_of(MPI_Comm comm, int *nodes, int *ppn);

/* The library's warm-up (warmup.c): the first ct_warmup_calls counted calls of each
 * communicator go to the library unchanged, with everything between them. ct_warmup_start at
 * MPI_Init (-1 and a message in err for a malformed COLLTUNE_LIBRARY_WARMUP), ct_warmup_stop at
 * MPI_Finalize; ct_warmup_pass: 1 when the call must go to the library (and it is counted);
 * ct_warmup_counted: whether the library counts this call. */
CT_HIDDEN extern unsigned ct_warmup_calls;
CT_HIDDEN int ct_warmup_start(char *err, size_t len);
CT_HIDDEN void ct_warmup_stop(void);
CT_HIDDEN int ct_warmup_pass(const ct_call *call);
CT_HIDDEN int ct_warmup_counted(const ct_call *call);

/* Learning mode (learn.c). At MPI_Init: ct_learn_prepare reads the settings and fills the
 * slots the ranks compare (state, table hash and their complements, rank 0's seed); after the
 * PMPI_Allreduce (MPI_MAX) ct_learn_start says whether the mode is on (1) and warns if not. */
enum { CT_LEARN_OFF = 0, CT_LEARN_BAD = 1, CT_LEARN_OK = 2 };
enum { CT_L_STATE, CT_L_STATE_NOT, CT_L_HASH, CT_L_HASH_NOT, CT_L_SEED, CT_LEARN_SLOTS };
CT_HIDDEN int ct_learn_prepare(uint64_t slots[CT_LEARN_SLOTS], uint64_t portfolio, char *err,
                               size_t errlen);
/* Whether the learning mode is asked for (COLLTUNE_SELECT or COLLTUNE_TRACE_DIR set). */
CT_HIDDEN int ct_learn_wanted(void);
CT_HIDDEN int ct_learn_start(const uint64_t agreed[CT_LEARN_SLOTS], int rank, int size,
                             const char *err);
CT_HIDDEN void ct_learn_describe(void);
CT_HIDDEN ct_decision ct_learn_decide(const ct_call *call);
/* The whole call when the learning mode alone looks at it (no counting): decide, run, trace. */
CT_HIDDEN int ct_learn_dispatch(const ct_call *call);
CT_HIDDEN int ct_learn_tracing(void);
/* MPI_I<coll> (`form` nonblocking) or MPI_<Coll>_init (persistent, with `info`) decided by the
 * learning mode (the form's portfolio), when ct_learn_nonblocking (ct_learn_persistent) is set
 * (at MPI_Init): started or made, traced, its request followed on a tracing rank; `d` for
 * counting. */
extern CT_HIDDEN int ct_learn_nonblocking, ct_learn_persistent;
/* The library's own call of a started form: MPI_I<coll>, or MPI_<Coll>_init with `info`.
 * Inline: `form` is a constant where the learning mode's nonblocking path calls it, which then
 * jumps to colltune_start_library directly (a function of its own cost 8 instructions per
 * MPI_I<coll>, benchmarks/learning_runtime). */
static inline int ct_start_library(enum ct_form form, const ct_call *call, MPI_Info info,
                                   MPI_Request *request)
{
    return form == CT_FORM_PERSISTENT ? colltune_init_library(call, info, request)
                                      : colltune_start_library(call, request);
}
CT_HIDDEN int ct_learn_started(enum ct_form form, const ct_call *call, MPI_Info info,
                               MPI_Request *request, ct_decision *d);
/* The same when nothing counts the decision (what ct_learn_dispatch is to blocking calls). */
CT_HIDDEN int ct_learn_dispatch_started(const ct_call *call, MPI_Request *request);
/* A blocking call on `comm` passed to the library by its warm-up while counting: the
 * communicator's learning state is made (collective: every rank is in that call). */
CT_HIDDEN void ct_learn_warmup_call(MPI_Comm comm);
/* The record (index + 1) of a followed started call completed: `ns` its own time (start and
 * the Wait/Test calls given it alone), `alone` 0 if a call completed it with other requests or
 * was given it among others: then it keeps no reward (trace.c). */
CT_HIDDEN void ct_trace_completed(uint64_t record, uint64_t ns, int alone);
/* Run the decided call, timed; its record was prepared by ct_learn_decide on this thread. */
CT_HIDDEN int ct_learn_run_traced(const ct_call *call, ct_decision *d);
/* Check mode (check.c, COLLTUNE_SELECT_CHECK=1): run the variant and the library, compare. */
CT_HIDDEN int ct_check_run(const ct_call *call, ct_decision *d);
CT_HIDDEN void ct_check_report(int rank);
/* MPI_Finalize: write this rank's trace, free everything; ct_learn_stop frees without writing. */
CT_HIDDEN void ct_learn_finish(void);
CT_HIDDEN void ct_learn_stop(void);

/* Library members of the learning mode (libalg_online.c): decision ids from CT_LIB_BASE up,
 * above the catalog's variants and the counting table's per-collective library slots. */
#define CT_LIB_BASE (CT_NUM_VARIANTS + CT_NUM_COLLECTIVES)
#define CT_LIB_MAX (CT_NUM_COLLECTIVES * 16)
/* MPI_Init, before the table is parsed: register the library's algorithms with the parser;
 * returns a hash of their names (the ranks compare it with the table's). */
CT_HIDDEN uint64_t ct_libalg_setup(void);
CT_HIDDEN const char *ct_libalg_name(int id);
/* The id of member `name` (`lib:<coll>:<alg>`), or -1; why the library offers none, or NULL. */
CT_HIDDEN int ct_libalg_find(const char *name);
CT_HIDDEN const char *ct_libalg_note(void);
CT_HIDDEN colltune_reason ct_libalg_applicable(int id, const ct_call *call);
CT_HIDDEN int ct_libalg_collective(int id);
/* Run member d->variant; if it could not serve the call, the library's choice runs and
 * d->reason says why (refused, unavailable). */
CT_HIDDEN int ct_libalg_run(const ct_call *call, ct_decision *d);
/* The same for a member of the nonblocking or persistent form (`lib:<coll>:<alg>#nonblocking`,
 * `...#persistent`): the call started (MPI_I<coll>) or the persistent request initialized
 * (MPI_<Coll>_init with `info`) with its algorithm (the library's own if it could not), the
 * request in *request. A member of another form: nothing called, d->variant -1. */
CT_HIDDEN int ct_libalg_start(const ct_call *call, ct_decision *d, MPI_Info info,
                              MPI_Request *request);
/* The form of the calls member `id` serves (enum ct_form, ct_functions.h): CT_FORM_BLOCKING for
 * the blocking ones and for any id that is no library member. */
CT_HIDDEN int ct_libalg_form(int id);
/* Where member communicators of `comm` hang while the learning mode runs: learn.c hands its
 * per-communicator slot lookup (NULL: none, libalg_online.c then uses an attribute of its own);
 * they are released with the communicator (its attribute's delete callback) or at MPI_Finalize
 * (ct_libalg_finish, after ct_learn_finish). */
CT_HIDDEN void ct_libalg_slots_from(void **(*slot_of)(MPI_Comm comm));
CT_HIDDEN void ct_libalg_comm_free(void *cache);
CT_HIDDEN void ct_libalg_finish(void);

/* The proof gate (proof.c, docs/select.md "The proof"). ct_proof_load at MPI_Init, after the
 * library members are registered, returns the proof's hash (0: no proof, nothing is served). */
CT_HIDDEN uint64_t ct_proof_load(void);
CT_HIDDEN int ct_proof_loaded(void);
/* A proof file of an older format was found (and not used: it must be redone). */
CT_HIDDEN int ct_proof_stale(void);
CT_HIDDEN const char *ct_proof_where(void);
CT_HIDDEN void ct_proof_clear(void);
CT_HIDDEN colltune_reason ct_proof_check(int id, const ct_call *call);
/* What the proof must hold for one call, worked out on the first member that needs it and then
 * asked of every member the decision considers: classifying a call costs PMPI datatype and
 * communicator queries, ~1,500 instructions, and a learning redraw asks of the whole portfolio.
 * Start it as CT_PROOF_NEED_UNKNOWN; it is valid for that one call only. */
typedef struct ct_proof_need {
    ct_proof_set classes;
    int state;             /* 0 unknown, 1 known, -1 unclassifiable: no member is proven */
    int size_ok;           /* a sized class is required and proven on the call's size, or none is */
} ct_proof_need;
#define CT_PROOF_NEED_UNKNOWN {.state = 0}
CT_HIDDEN int ct_proof_meets_need(int id, const ct_call *call, ct_proof_need *need);
/* Whether member `id` passed some class of the proof (or all). */
CT_HIDDEN int ct_proof_some(int id);
/* Members proven in every class their collective can take: no per-call classification. */
extern CT_HIDDEN unsigned char ct_proof_full[CT_LIB_BASE + CT_LIB_MAX];

/* The name of a variant or library member (libalg_online.c). */
CT_HIDDEN const char *ct_member_name(int id);

/* Whether the (count, datatype) pairs significant on this rank are erroneous (null datatype,
 * negative count), given whether this rank is the root. Such calls go to the library untouched
 * (modes.c, ct_erroneous): the decision path's own queries (PMPI_Type_size of
 * MPI_DATATYPE_NULL, ...) would raise the error on MPI_COMM_WORLD's handler instead of the
 * communicator's. */
/* One side of a v/w form (its counts, displacements and datatype or datatypes) is missing. */
static inline int ct_side_missing(const int *counts, const void *displs, int no_type)
{
    return counts == NULL || displs == NULL || no_type;
}

static inline int ct_args_erroneous(const ct_call *call, int is_root)
{
    int send = 0, recv = 1;
    int own_send = call->sendbuf != MPI_IN_PLACE;
    switch (call->coll) {
    case CT_COLL_BARRIER:
        recv = 0;
        break;
    case CT_COLL_NEIGHBOR_ALLGATHERV:   /* no MPI_IN_PLACE: own_send */
    case CT_COLL_ALLGATHERV:   /* a case of its own (not Gatherv's): no test of which it is */
        send = own_send;
        recv = 0;   /* counts of the receive side: checked here */
        if (ct_side_missing(call->recvcounts, call->rdispls, call->recvtype == MPI_DATATYPE_NULL))
            return 1;
        break;
    case CT_COLL_GATHERV:
        send = !(is_root && !own_send);
        recv = 0;   /* counts of the receive side: checked here, at the root only */
        if (is_root
            && ct_side_missing(call->recvcounts, call->rdispls, call->recvtype == MPI_DATATYPE_NULL))
            return 1;
        break;
    case CT_COLL_SCATTERV:
        if (is_root
            && ct_side_missing(call->sendcounts, call->sdispls, call->sendtype == MPI_DATATYPE_NULL))
            return 1;
        recv = !(is_root && call->recvbuf == MPI_IN_PLACE);
        break;
    case CT_COLL_NEIGHBOR_ALLTOALLV:
    case CT_COLL_ALLTOALLV:
    case CT_COLL_ALLTOALLW: {
        int w = call->coll == CT_COLL_ALLTOALLW;
        recv = 0;
        if (own_send && ct_side_missing(call->sendcounts, call->sdispls,
                                        w ? call->sendtypes == NULL
                                          : call->sendtype == MPI_DATATYPE_NULL))
            return 1;
        if (ct_side_missing(call->recvcounts, call->rdispls,
                            w ? call->recvtypes == NULL : call->recvtype == MPI_DATATYPE_NULL))
            return 1;
        break;
    }
    case CT_COLL_NEIGHBOR_ALLTOALLW:   /* MPI_Aint displacements; no MPI_IN_PLACE */
        recv = 0;
        if (ct_side_missing(call->sendcounts, call->sdispls_aint, call->sendtypes == NULL)
            || ct_side_missing(call->recvcounts, call->rdispls_aint, call->recvtypes == NULL))
            return 1;
        break;
    case CT_COLL_ALLGATHER:
    case CT_COLL_ALLTOALL:
    case CT_COLL_NEIGHBOR_ALLGATHER:
    case CT_COLL_NEIGHBOR_ALLTOALL:
        send = call->sendbuf != MPI_IN_PLACE;
        break;
    case CT_COLL_GATHER:
        send = !(is_root && call->sendbuf == MPI_IN_PLACE);
        recv = is_root;
        break;
    case CT_COLL_SCATTER:
        send = is_root;
        recv = !(is_root && call->recvbuf == MPI_IN_PLACE);
        break;
    case CT_COLL_REDUCE_SCATTER:
        recv = 0;   /* recvcounts: the datatype is checked here */
        if (call->recvtype == MPI_DATATYPE_NULL || call->recvcounts == NULL)
            return 1;
        break;
    default:
        break;
    }
    if (send && (call->sendtype == MPI_DATATYPE_NULL || call->sendcount < 0))
        return 1;
    if (recv && (call->recvtype == MPI_DATATYPE_NULL || call->recvcount < 0))
        return 1;
    return 0;
}

/* ct_erroneous for a non-null intra-communicator whose size and this rank's rank are known
 * (learn.c keeps them per communicator: no PMPI query on the call path). */
static inline int ct_erroneous_intra(const ct_call *call, int size, int rank)
{
    const ct_collective_info *info = &ct_collectives[call->coll];
    if (info->has_op && call->op == MPI_OP_NULL)
        return 1;
    int is_root = 0;
    if (info->has_root) {
        if (call->root < 0 || call->root >= size)
            return 1;
        is_root = call->root == rank;
    }
    return ct_args_erroneous(call, is_root);
}

/* Counting table (count.c). */
CT_HIDDEN void ct_count_decision(int coll, const ct_decision *d);
/* An explored draw of member `id` redrawn because `id` is not proven for the call (learn.c). */
CT_HIDDEN void ct_count_redraw(int id);
CT_HIDDEN void ct_count_print(FILE *out, int rank, int nprocs);
/* Calls of collective `coll` counted so far, every outcome. */
CT_HIDDEN unsigned long long ct_count_calls(int coll);

/* Debug queries for tests and benchmarks (exported: a program finds them with dlsym when
 * libcolltune is preloaded). How the wrapper of collective `coll` serves it now:
 * "pass-through" (it calls the library directly: no mode, no counting), "counting" (counted,
 * no mode decides), "force", "profile", "learning" (decided by the learning mode and counted),
 * "learning-only" (learn.c runs the whole call); while profiling (COLLTUNE_PROFILE_RUN)
 * "profiling" (timed, the library serves it) or "profiling+" and the mode that serves it;
 * NULL for an index out of range. And whether
 * learning-mode calls take the full path because this rank checks or its trace is open. */
__attribute__((visibility("default"))) const char *colltune_route_name(int coll);
__attribute__((visibility("default"))) int colltune_learn_recording(void);

/* A whole decimal number of a setting (env.c); -1 if the text is anything else. */
CT_HIDDEN int ct_parse_u64(const char *text, uint64_t *value);

/* Messages: every line starts with "colltune: " so that users and tests can find them. */
CT_HIDDEN void ct_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* CT_RUNTIME_H */

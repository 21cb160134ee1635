/*
 * The counting and profiling modes' view of every collective function (ct_watch.h): per MPI
 * function calls, bytes, operations started and completed; the watched functions' calls into
 * the profiling mode's points.
 *
 * Relaxed C11 atomics, as count.c's: several threads may count at once (MPI_THREAD_MULTIPLE),
 * the totals are read at MPI_Finalize only.
 *
 * Printed after the counting table (stderr, rank 0), one line per function called:
 *   colltune: functions on rank 0 of 4: function calls bytes started completed
 *   colltune:   MPI_Iallreduce  3  24  3  3
 * bytes: the sum of the calls' sizes (the row's `bytes` rule), "-" where none had one;
 * started: operations started (a blocking or nonblocking call, MPI_Start of a persistent
 * request); completed: operations that ended (a blocking call returning, Wait/Test completing
 * a request).
 */
#include <stdatomic.h>
#include <stdio.h>

#include "ct_profrun_impl.h"
#include "ct_watch.h"

CT_HIDDEN unsigned char ct_watch;
CT_HIDDEN unsigned char ct_start_watch;

enum { CT_FN_CALLS, CT_FN_BYTES, CT_FN_SIZED, CT_FN_STARTED, CT_FN_COMPLETED, CT_FN_FIELDS };
static atomic_ullong ct_fn_counts[CT_NUM_FUNCTIONS][CT_FN_FIELDS];
/* A served collective's calls' bytes (all its bindings), and how many had a size. */
static atomic_ullong ct_coll_bytes[CT_NUM_COLLECTIVES][2];

static void ct_add(atomic_ullong *x, unsigned long long v)
{
    atomic_fetch_add_explicit(x, v, memory_order_relaxed);
}

static unsigned long long ct_get(atomic_ullong *x)
{
    return atomic_load_explicit(x, memory_order_relaxed);
}

int64_t ct_watch_size(MPI_Datatype type)
{
    int size;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return -1;
    return size;
}

int64_t ct_watch_comm_size(MPI_Comm comm)
{
    int size;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return -1;
    return size;
}

int64_t ct_watch_sum(const int *counts, MPI_Comm comm)
{
    int64_t p = ct_watch_comm_size(comm), sum = 0;
    if (p < 0 || counts == NULL)
        return -1;
    for (int64_t i = 0; i < p; i++)
        sum += counts[i];
    return sum;
}

#if MPI_VERSION >= 4
int64_t ct_watch_sum_large(const MPI_Count *counts, MPI_Comm comm)
{
    int64_t p = ct_watch_comm_size(comm), sum = 0;
    if (p < 0 || counts == NULL)
        return -1;
    for (int64_t i = 0; i < p; i++)
        sum += (int64_t)counts[i];
    return sum;
}
#endif

/* sum(counts) x size(type), -1 if either is unknown (or the sum negative: an erroneous count). */
static int64_t ct_sum_bytes(const int *counts, MPI_Datatype type, MPI_Comm comm)
{
    int64_t sum = ct_watch_sum(counts, comm), size = ct_watch_size(type);
    return sum < 0 || size < 0 ? -1 : sum * size;
}

static int64_t ct_scalar_bytes(int count, MPI_Datatype type)
{
    int64_t size = ct_watch_size(type);
    return count < 0 || size < 0 ? -1 : (int64_t)count * size;
}

static int64_t ct_alltoallw_bytes(const ct_call *call)
{
    int64_t p = ct_watch_comm_size(call->comm), sum = 0;
    if (p < 0 || call->recvcounts == NULL || call->recvtypes == NULL)
        return -1;
    for (int64_t i = 0; i < p; i++) {
        int64_t size = ct_watch_size(call->recvtypes[i]);
        if (size < 0 || call->recvcounts[i] < 0)
            return -1;
        sum += (int64_t)call->recvcounts[i] * size;
    }
    return sum;
}

/* 1 this rank is the root, 0 it is not, -1 unknown or an inter-communicator. */
static int ct_is_root(const ct_call *call)
{
    int inter, rank;
    if (PMPI_Comm_test_inter(call->comm, &inter) != MPI_SUCCESS || inter
        || PMPI_Comm_rank(call->comm, &rank) != MPI_SUCCESS)
        return -1;
    return rank == call->root;
}

int64_t ct_watch_call_bytes(const ct_call *call)
{
    int root;
    switch (call->coll) {
    case CT_COLL_GATHERV:
        if ((root = ct_is_root(call)) < 0)
            break;
        return root ? ct_sum_bytes(call->recvcounts, call->recvtype, call->comm)
                    : ct_scalar_bytes(call->sendcount, call->sendtype);
    case CT_COLL_SCATTERV:
        if ((root = ct_is_root(call)) < 0)
            break;
        return root ? ct_sum_bytes(call->sendcounts, call->sendtype, call->comm)
                    : ct_scalar_bytes(call->recvcount, call->recvtype);
    case CT_COLL_ALLTOALLV:
        return ct_sum_bytes(call->recvcounts, call->recvtype, call->comm);
    case CT_COLL_ALLTOALLW:
        return ct_alltoallw_bytes(call);
    default:
        break;
    }
    return colltune_call_bytes(call);
}

static void ct_fn_count(int fn, int64_t bytes, int started, int completed)
{
    atomic_ullong *c = ct_fn_counts[fn];
    ct_add(&c[CT_FN_CALLS], 1);
    if (bytes >= 0) {
        ct_add(&c[CT_FN_BYTES], (unsigned long long)bytes);
        ct_add(&c[CT_FN_SIZED], 1);
    }
    if (started)
        ct_add(&c[CT_FN_STARTED], 1);
    if (completed)
        ct_add(&c[CT_FN_COMPLETED], 1);
}

void ct_fn_seen(int fn, const void *site, MPI_Comm comm, int64_t bytes, uint64_t t0,
                const MPI_Request *request)
{
    if (!(ct_watch & CT_WATCH_SEE))
        return;   /* only the learning mode follows requests: its own (ct_req_learned) */
    uint64_t t1 = ct_watch_clock();
    int form = ct_fns[fn].form;
    int made = request != NULL && *request != MPI_REQUEST_NULL;
    ct_fn_count(fn, bytes, form != CT_FORM_PERSISTENT && (form == CT_FORM_BLOCKING || made),
                form == CT_FORM_BLOCKING);
    struct ct_point *point = NULL;
    if (ct_profrun_on && !ct_profrun_inside) {
        int64_t nprocs = ct_watch_comm_size(comm);
        point = ct_profrun_watched(CT_PR_FN_BASE + fn, site, nprocs < 0 ? 0 : (int)nprocs, bytes,
                                   t1 - t0);
        if (point != NULL && made && form == CT_FORM_NONBLOCKING)
            atomic_fetch_add_explicit(&point->req_starts, 1, memory_order_relaxed);
    }
    if (made)
        ct_req_add(*request, fn, point, form == CT_FORM_PERSISTENT, t0);
}

void ct_fn_note(int fn, int64_t bytes)
{
    ct_fn_count(fn, bytes, 1, 1);
}

void ct_fn_coll_bytes(int coll, int64_t bytes)
{
    if (bytes >= 0) {
        ct_add(&ct_coll_bytes[coll][0], (unsigned long long)bytes);
        ct_add(&ct_coll_bytes[coll][1], 1);
    }
}

void ct_req_count_start(int fn)
{
    ct_add(&ct_fn_counts[fn][CT_FN_STARTED], 1);
}

void ct_req_count_completion(int fn)
{
    ct_add(&ct_fn_counts[fn][CT_FN_COMPLETED], 1);
}

void ct_fn_print(FILE *out)
{
    fprintf(out, "colltune: functions: function calls bytes started completed\n");
    for (int fn = 0; fn < CT_NUM_FUNCTIONS; fn++) {
        const ct_fn_info *f = &ct_fns[fn];
        atomic_ullong *c = ct_fn_counts[fn];
        unsigned long long calls = ct_get(&c[CT_FN_CALLS]), bytes = ct_get(&c[CT_FN_BYTES]);
        unsigned long long sized = ct_get(&c[CT_FN_SIZED]), started = ct_get(&c[CT_FN_STARTED]);
        unsigned long long completed = ct_get(&c[CT_FN_COMPLETED]);
        if (f->served && !f->large) {
            /* the int binding of a served collective: the counting table's calls of the
             * collective (every served binding) less its _c binding's, the next function,
             * where that is served too (else it is watched, counted on its own) */
            atomic_ullong *large = fn + 1 < CT_NUM_FUNCTIONS && ct_fns[fn + 1].large
                                       && ct_fns[fn + 1].served ? ct_fn_counts[fn + 1] : NULL;
            /* + its own watched calls: Fortran's Alltoallw (gen_fortran.py, untranslatable) */
            calls += ct_count_calls(f->coll) - (large ? ct_get(&large[CT_FN_CALLS]) : 0);
            bytes += ct_get(&ct_coll_bytes[f->coll][0]) - (large ? ct_get(&large[CT_FN_BYTES]) : 0);
            sized += ct_get(&ct_coll_bytes[f->coll][1]) - (large ? ct_get(&large[CT_FN_SIZED]) : 0);
            started = completed = calls;
        }
        if (calls == 0 && started == 0)
            continue;
        char mpi[64];
        snprintf(mpi, sizeof mpi, "MPI_%c%s", f->name[0] - 'a' + 'A', f->name + 1);
        char b[32] = "-";
        if (sized > 0)
            snprintf(b, sizeof b, "%llu", bytes);
        fprintf(out, "colltune:   %-34s %10llu %14s %10llu %10llu\n", mpi, calls, b, started,
                completed);
    }
    fprintf(out, "colltune: end of functions\n");
}

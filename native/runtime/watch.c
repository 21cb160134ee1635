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

/* The i-th count of a descriptor's array: int, MPI_Count (the _c bindings) or MPI_Fint. */
static int64_t ct_vw_count(const ct_vw *v, const void *counts, int64_t i)
{
#if MPI_VERSION >= 4
    if (v->large)
        return (int64_t)((const MPI_Count *)counts)[i];
#endif
    if (v->fortran)
        return ((const MPI_Fint *)counts)[i];
    return ((const int *)counts)[i];
}

static MPI_Datatype ct_vw_type(const ct_vw *v, const void *types, int64_t i)
{
    return v->fortran ? PMPI_Type_f2c(((const MPI_Fint *)types)[i])
                      : ((const MPI_Datatype *)types)[i];
}

/* counts[i] x size(types[i], or the one `type`) over n blocks; -1 where a size is unknown or a
 * count negative (an erroneous call). */
static int64_t ct_vw_blocks(const ct_vw *v, int64_t n, const void *counts, MPI_Datatype type,
                            const void *types)
{
    if (n < 0 || counts == NULL || (types == NULL && type == MPI_DATATYPE_NULL))
        return -1;
    int64_t size = types == NULL ? ct_watch_size(type) : 0, sum = 0;
    for (int64_t i = 0; i < n && size >= 0; i++) {
        int64_t count = ct_vw_count(v, counts, i);
        if (types != NULL)
            size = ct_watch_size(ct_vw_type(v, types, i));
        if (count < 0)
            return -1;
        sum += count * size;
    }
    return size < 0 ? -1 : sum;
}

static int64_t ct_scalar_bytes(int64_t count, MPI_Datatype type)
{
    int64_t size = ct_watch_size(type);
    return count < 0 || size < 0 ? -1 : count * size;
}

/* The blocks of an all-to-all: the remote group's on an inter-communicator. */
static int64_t ct_peer_count(MPI_Comm comm)
{
    int inter, size;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return -1;
    if (!inter)
        return ct_watch_comm_size(comm);
    return PMPI_Comm_remote_size(comm, &size) == MPI_SUCCESS ? size : -1;
}

/* The neighbours a rank sends to in its communicator's topology (the length of a neighborhood
 * collective's send arrays), -1 without a topology. */
static int64_t ct_out_degree(MPI_Comm comm)
{
    int kind, n, in, out, weighted, rank;
    if (comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &kind) != MPI_SUCCESS)
        return -1;
    switch (kind) {
    case MPI_CART:
        return PMPI_Cartdim_get(comm, &n) == MPI_SUCCESS ? 2 * (int64_t)n : -1;
    case MPI_GRAPH:
        return PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS
                       && PMPI_Graph_neighbors_count(comm, rank, &n) == MPI_SUCCESS
                   ? n : -1;
    case MPI_DIST_GRAPH:
        return PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted) == MPI_SUCCESS ? out
                                                                                          : -1;
    default:
        return -1;
    }
}

/* 1 this rank is the root, 0 it is not, -1 unknown or an inter-communicator. */
static int ct_is_root(MPI_Comm comm, int root)
{
    int inter, rank;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter
        || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return -1;
    return rank == root;
}

int64_t ct_watch_vw_bytes(const ct_vw *v)
{
    int root;
    switch (v->kind) {
    case CT_VW_GATHERV:
        if ((root = ct_is_root(v->comm, v->root)) < 0)
            return 0;   /* an inter-communicator's: the row's figure */
        return root ? ct_vw_blocks(v, ct_watch_comm_size(v->comm), v->recvcounts, v->recvtype, NULL)
                    : ct_scalar_bytes(v->sendcount, v->sendtype);
    case CT_VW_SCATTERV:
        if ((root = ct_is_root(v->comm, v->root)) < 0)
            return 0;
        return root ? ct_vw_blocks(v, ct_watch_comm_size(v->comm), v->sendcounts, v->sendtype, NULL)
                    : ct_scalar_bytes(v->recvcount, v->recvtype);
    case CT_VW_ALLTOALLV:
        return ct_vw_blocks(v, ct_peer_count(v->comm), v->recvcounts, v->recvtype, NULL);
    case CT_VW_ALLTOALLW:
        return ct_vw_blocks(v, ct_peer_count(v->comm), v->recvcounts, MPI_DATATYPE_NULL,
                            v->recvtypes);
    case CT_VW_NEIGHBOR_ALLTOALLV:
        return ct_vw_blocks(v, ct_out_degree(v->comm), v->sendcounts, v->sendtype, NULL);
    case CT_VW_NEIGHBOR_ALLTOALLW:
        return ct_vw_blocks(v, ct_out_degree(v->comm), v->sendcounts, MPI_DATATYPE_NULL,
                            v->sendtypes);
    default:
        return -1;
    }
}

int64_t ct_watch_call_bytes(const ct_call *call)
{
    static const int kinds[][2] = {{CT_COLL_GATHERV, CT_VW_GATHERV},
                                   {CT_COLL_SCATTERV, CT_VW_SCATTERV},
                                   {CT_COLL_ALLTOALLV, CT_VW_ALLTOALLV},
                                   {CT_COLL_ALLTOALLW, CT_VW_ALLTOALLW},
                                   {CT_COLL_NEIGHBOR_ALLTOALLV, CT_VW_NEIGHBOR_ALLTOALLV},
                                   {CT_COLL_NEIGHBOR_ALLTOALLW, CT_VW_NEIGHBOR_ALLTOALLW}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (kinds[k][0] != call->coll)
            continue;
        const ct_vw v = {
            .kind = kinds[k][1], .comm = call->comm, .root = call->root,
            .sendcount = call->sendcount, .recvcount = call->recvcount,
            .sendcounts = call->sendcounts, .recvcounts = call->recvcounts,
            .sendtype = call->sendtype, .recvtype = call->recvtype,
            .sendtypes = call->sendtypes, .recvtypes = call->recvtypes,
        };
        return ct_watch_vw_bytes(&v);
    }
    return colltune_call_counted_bytes(call);
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

/*
 * The neighborhood collectives as jobs (docs/guidelines.md, "Neighborhood collectives"): each
 * job's call runs on a periodic two-dimensional Cartesian torus (MPI_Dims_create) of the job's
 * processes, with equal blocks of n bytes per neighbour (the v/w forms: equal counts,
 * block i at i n). The sides the guidelines put against it are variants of the job, measured in
 * the same launches and rounds as its default:
 *
 *   default#graph      the same call on a distributed graph of the torus's neighbours, in the
 *                      torus's order (MPI_Dist_graph_create_adjacent)
 *   default#complete   the same call on the complete graph (every process, itself too, in rank
 *                      order): Neighbor_allgather then is Allgather, Neighbor_alltoall Alltoall
 *   default#dense      MPI_Allgather / MPI_Alltoall of n bytes on the job's communicator
 *   default#alltoallv  MPI_Alltoallv on the job's communicator with the torus neighbours'
 *                      counts only (n per time a process is a neighbour, 0 elsewhere)
 *   default#alltoall   MPI_Neighbor_alltoall on the torus with n bytes to each neighbour:
 *                      what Neighbor_allgather sends, one block per neighbour
 *   default#nonblocking  MPI_Ineighbor_<coll> on the torus, then MPI_Wait
 *
 * The communicators are made when the job is set up, outside every timed region, and freed
 * with its buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"

enum { NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW, NB_ROWS };
static const char *const row_names[NB_ROWS] = {
    "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
    "neighbor_alltoallw",
};

/* What a variant of a neighborhood job calls. */
enum {
    NBC_TORUS, NBC_GRAPH, NBC_COMPLETE, NBC_DENSE, NBC_ALLTOALLV, NBC_ALLTOALL, NBC_NONBLOCKING
};
#define ROW(r) (1u << (r))
#define ALL_ROWS (ROW(NB_ROWS) - 1u)
static const struct { const char *name; int call; unsigned rows; } nb_variants[] = {
    {"default", NBC_TORUS, ALL_ROWS},
    {"default#aa", NBC_TORUS, ALL_ROWS},
    {"default#graph", NBC_GRAPH, ALL_ROWS},
    {"default#complete", NBC_COMPLETE, ROW(NB_ALLGATHER) | ROW(NB_ALLTOALL)},
    {"default#dense", NBC_DENSE, ROW(NB_ALLGATHER) | ROW(NB_ALLTOALL)},
    {"default#alltoallv", NBC_ALLTOALLV, ROW(NB_ALLTOALL)},
    {"default#alltoall", NBC_ALLTOALL, ROW(NB_ALLGATHER)},
    {"default#nonblocking", NBC_NONBLOCKING, ALL_ROWS},
};

struct ct_nbsetup {
    int row;
    MPI_Comm comm;                 /* the job's communicator (the dense sides) */
    MPI_Comm torus, graph, complete;
    int count;                     /* elements per block */
    MPI_Datatype type;
    void *send, *recv;             /* max(neighbours, p) blocks each */
    int *counts, *displs;          /* max(neighbours, p) equal counts, block i at i count */
    MPI_Aint *bdispls;             /* the same in bytes (Neighbor_alltoallw) */
    MPI_Datatype *types;
    int *vcounts, *vdispls;        /* default#alltoallv: p counts, the torus neighbours' only */
};

int ct_neighbor_row(const char *collective)
{
    for (int r = 0; r < NB_ROWS; r++)
        if (strcmp(collective, row_names[r]) == 0)
            return r;
    return -1;
}

static int torus_create(MPI_Comm comm, int p, MPI_Comm *torus, int nbrs[4])
{
    int dims[2] = {0, 0}, periods[2] = {1, 1}, rc;
    if ((rc = PMPI_Dims_create(p, 2, dims)) != MPI_SUCCESS
        || (rc = PMPI_Cart_create(comm, 2, dims, periods, 0, torus)) != MPI_SUCCESS)
        return rc;
    /* the standard's order of a Cartesian communicator's neighbours: per dimension, the
     * negative direction first */
    for (int d = 0; d < 2; d++)
        if ((rc = PMPI_Cart_shift(*torus, d, 1, &nbrs[2 * d], &nbrs[2 * d + 1])) != MPI_SUCCESS)
            return rc;
    return MPI_SUCCESS;
}

static int graphs_create(ct_nbsetup *s, int p, const int nbrs[4])
{
    int *all = malloc((size_t)p * sizeof *all), rc;
    if (!all)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < p; i++)
        all[i] = i;
    rc = PMPI_Dist_graph_create_adjacent(s->comm, 4, nbrs, MPI_UNWEIGHTED, 4, nbrs,
                                         MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &s->graph);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Dist_graph_create_adjacent(s->comm, p, all, MPI_UNWEIGHTED, p, all,
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &s->complete);
    free(all);
    return rc;
}

static int arrays_create(ct_nbsetup *s, int blocks, int p, int tsize, const int nbrs[4])
{
    s->counts = malloc((size_t)blocks * sizeof *s->counts);
    s->displs = malloc((size_t)blocks * sizeof *s->displs);
    s->bdispls = malloc((size_t)blocks * sizeof *s->bdispls);
    s->types = malloc((size_t)blocks * sizeof *s->types);
    s->vcounts = calloc((size_t)p, sizeof *s->vcounts);
    s->vdispls = malloc((size_t)p * sizeof *s->vdispls);
    if (!s->counts || !s->displs || !s->bdispls || !s->types || !s->vcounts || !s->vdispls)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < blocks; i++) {
        s->counts[i] = s->count;
        s->displs[i] = i * s->count;
        s->bdispls[i] = (MPI_Aint)i * s->count * tsize;
        s->types[i] = s->type;
    }
    for (int k = 0; k < 4; k++)
        s->vcounts[nbrs[k]] += s->count;
    for (int j = 0, at = 0; j < p; j++) {
        s->vdispls[j] = at;
        at += s->vcounts[j];
    }
    return MPI_SUCCESS;
}

void ct_neighbor_free(ct_nbsetup *s)
{
    if (!s)
        return;
    MPI_Comm *comms[] = {&s->torus, &s->graph, &s->complete};
    for (size_t i = 0; i < sizeof comms / sizeof comms[0]; i++)
        if (*comms[i] != MPI_COMM_NULL)
            PMPI_Comm_free(comms[i]);
    free(s->counts);
    free(s->displs);
    free(s->bdispls);
    free(s->types);
    free(s->vcounts);
    free(s->vdispls);
    free(s);
}

int ct_neighbor_setup(int row, MPI_Comm comm, int64_t count, MPI_Datatype type, ct_buffers *b,
                      ct_call *call, char *err, size_t errlen)
{
    int p, tsize, nbrs[4], rc;
    if ((rc = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS
        || (rc = PMPI_Type_size(type, &tsize)) != MPI_SUCCESS)
        return rc;
    int blocks = p > 4 ? p : 4;
    if (count * blocks > INT32_MAX) {
        snprintf(err, errlen, "%lld elements per block overflow an int displacement",
                 (long long)count);
        return MPI_ERR_COUNT;
    }
    ct_nbsetup *s = calloc(1, sizeof *s);
    if (!s)
        return MPI_ERR_NO_MEM;
    b->nb = s;
    s->row = row;
    s->comm = comm;
    s->torus = s->graph = s->complete = MPI_COMM_NULL;
    s->count = (int)count;
    s->type = type;
    size_t bytes = (size_t)count * (size_t)tsize * (size_t)blocks;
    b->send = calloc(bytes ? bytes : 1, 1);
    b->recv = calloc(bytes ? bytes : 1, 1);
    b->send_bytes = b->recv_bytes = bytes;
    if (!b->send || !b->recv) {
        snprintf(err, errlen, "cannot allocate buffers of %zu bytes", bytes);
        return MPI_ERR_NO_MEM;
    }
    s->send = b->send;
    s->recv = b->recv;
    if ((rc = torus_create(comm, p, &s->torus, nbrs)) != MPI_SUCCESS
        || (rc = graphs_create(s, p, nbrs)) != MPI_SUCCESS) {
        snprintf(err, errlen, "cannot create the torus and graph communicators of %d processes", p);
        return rc;
    }
    if ((rc = arrays_create(s, blocks, p, tsize, nbrs)) != MPI_SUCCESS) {
        snprintf(err, errlen, "cannot allocate the counts of %d neighbours", blocks);
        return rc;
    }
    call->coll = -1;   /* no row of the decision point: run by ct_neighbor_invoke */
    call->sendbuf = b->send;
    call->recvbuf = b->recv;
    call->sendcount = call->recvcount = s->count;
    call->sendtype = call->recvtype = type;
    call->op = MPI_OP_NULL;
    call->root = -1;
    call->comm = s->torus;
    return MPI_SUCCESS;
}

int ct_neighbor_resolve(const ct_nbsetup *s, const char *name, ct_variant *v, char *why,
                        size_t whylen)
{
    for (size_t i = 0; i < sizeof nb_variants / sizeof nb_variants[0]; i++) {
        if (strcmp(name, nb_variants[i].name) != 0)
            continue;
        if (!(nb_variants[i].rows & ROW(s->row))) {
            snprintf(why, whylen, "%s is not a side of %s's guidelines (docs/guidelines.md)",
                     name, row_names[s->row]);
            return 0;
        }
        v->kind = strcmp(name, "default#aa") == 0 ? CT_VK_AA : CT_VK_DEFAULT;
        v->nb = s;
        v->nb_call = nb_variants[i].call;
        return 1;
    }
    return -1;
}

void ct_neighbor_started(ct_variant *v)
{
    v->nb_call = NBC_NONBLOCKING;
}

/* The row's call on `comm`, every count and array for its neighbours. */
static int row_call(const ct_nbsetup *s, MPI_Comm comm)
{
    int n = s->count;
    MPI_Datatype t = s->type;
    switch (s->row) {
    case NB_ALLGATHER: return PMPI_Neighbor_allgather(s->send, n, t, s->recv, n, t, comm);
    case NB_ALLGATHERV:
        return PMPI_Neighbor_allgatherv(s->send, n, t, s->recv, s->counts, s->displs, t, comm);
    case NB_ALLTOALL: return PMPI_Neighbor_alltoall(s->send, n, t, s->recv, n, t, comm);
    case NB_ALLTOALLV:
        return PMPI_Neighbor_alltoallv(s->send, s->counts, s->displs, t, s->recv, s->counts,
                                       s->displs, t, comm);
    default:
        return PMPI_Neighbor_alltoallw(s->send, s->counts, s->bdispls, s->types, s->recv,
                                       s->counts, s->bdispls, s->types, comm);
    }
}

static int row_start(const ct_nbsetup *s, MPI_Request *rq)
{
    int n = s->count;
    MPI_Datatype t = s->type;
    MPI_Comm c = s->torus;
    switch (s->row) {
    case NB_ALLGATHER: return PMPI_Ineighbor_allgather(s->send, n, t, s->recv, n, t, c, rq);
    case NB_ALLGATHERV:
        return PMPI_Ineighbor_allgatherv(s->send, n, t, s->recv, s->counts, s->displs, t, c, rq);
    case NB_ALLTOALL: return PMPI_Ineighbor_alltoall(s->send, n, t, s->recv, n, t, c, rq);
    case NB_ALLTOALLV:
        return PMPI_Ineighbor_alltoallv(s->send, s->counts, s->displs, t, s->recv, s->counts,
                                        s->displs, t, c, rq);
    default:
        return PMPI_Ineighbor_alltoallw(s->send, s->counts, s->bdispls, s->types, s->recv,
                                        s->counts, s->bdispls, s->types, c, rq);
    }
}

int ct_neighbor_invoke(const ct_variant *v)
{
    const ct_nbsetup *s = v->nb;
    int n = s->count, rc;
    MPI_Datatype t = s->type;
    MPI_Request rq;
    switch (v->nb_call) {
    case NBC_GRAPH: return row_call(s, s->graph);
    case NBC_COMPLETE: return row_call(s, s->complete);
    case NBC_DENSE:
        return s->row == NB_ALLGATHER ? PMPI_Allgather(s->send, n, t, s->recv, n, t, s->comm)
                                      : PMPI_Alltoall(s->send, n, t, s->recv, n, t, s->comm);
    case NBC_ALLTOALLV:
        return PMPI_Alltoallv(s->send, s->vcounts, s->vdispls, t, s->recv, s->vcounts,
                              s->vdispls, t, s->comm);
    case NBC_ALLTOALL: return PMPI_Neighbor_alltoall(s->send, n, t, s->recv, n, t, s->torus);
    case NBC_NONBLOCKING:
        rc = row_start(s, &rq);
        return rc == MPI_SUCCESS ? PMPI_Wait(&rq, MPI_STATUS_IGNORE) : rc;
    default: return row_call(s, s->torus);
    }
}

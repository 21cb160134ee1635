/*
 * The neighborhood collectives on two topologies, every value checked: a periodic ring (1-D
 * Cartesian; on 1 or 2 ranks one rank is both neighbours) and a distributed graph whose rank r
 * sends to the r mod 3 ranks after it (in- and out-degrees 0, 1 and 2 among the ranks).
 * Neighbor_allgather, Neighbor_allgatherv (rank r sends r mod 4 ints: zero among them, gaps of
 * one int between the received blocks), Neighbor_alltoall, Neighbor_alltoallv (the block from s
 * to d has (s + d) mod 3 ints), Neighbor_alltoallw (Neighbor_alltoallv's blocks, displacements
 * in bytes as MPI_Aint; odd ranks describe their blocks as pairs of ints, so sender and receiver
 * of a block use different datatypes of one signature), each with 1 and 1000 ints per unit, so
 * that a test can run it under the interposer with a member forced and compare.
 *
 *   ct_neighbor [-f blocking|nonblocking|persistent]
 *
 * -f: the calls' form (MPI_Ineighbor_* + MPI_Wait; MPI_Neighbor_*_init, MPI_Start + MPI_Wait
 * twice, MPI_Request_free). Rank 0 prints "calls COLL all=N" per collective; exit status 0 when
 * every result is right, otherwise "FAIL ..." and MPI_Abort.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV, ALLTOALLW, NCOLLS };
static const char *const names[NCOLLS] = {"neighbor_allgather", "neighbor_allgatherv",
                                          "neighbor_alltoall", "neighbor_alltoallv",
                                          "neighbor_alltoallw"};
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static int form = BLOCKING, rank, size;
static MPI_Datatype pair;   /* two contiguous ints: Neighbor_alltoallw's odd ranks' type */
static long calls[NCOLLS];

static void fail(int coll, const char *topo, const char *what, int i, long got, long want)
{
    fprintf(stderr, "FAIL %s %s %s rank=%d index=%d got=%ld want=%ld\n", names[coll], topo, what,
            rank, i, got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static int *ints(size_t n)
{
    int *p = malloc((n ? n : 1) * sizeof(int));
    if (p == NULL) {
        fprintf(stderr, "FAIL out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return p;
}

/* What rank s sends rank d (or everyone: d = -1) at position i. */
static int val(int s, int d, int i) { return s * 1000000 + (d + 1) * 10000 + i + 1; }

/* The neighbours in the order of the blocks (Cartesian: per dimension the source, then the
 * destination of a shift by +1). */
static int neighbors(MPI_Comm comm, int **src, int **dst, int *nin, int *nout)
{
    int status, weighted;
    MPI_Topo_test(comm, &status);
    if (status == MPI_CART) {
        *nin = *nout = 2;
        *src = ints(2), *dst = ints(2);
        MPI_Cart_shift(comm, 0, 1, &(*src)[0], &(*src)[1]);
        memcpy(*dst, *src, 2 * sizeof(int));
        return 1;
    }
    MPI_Dist_graph_neighbors_count(comm, nin, nout, &weighted);
    *src = ints((size_t)*nin), *dst = ints((size_t)*nout);
    MPI_Dist_graph_neighbors(comm, *nin, *src, MPI_UNWEIGHTED, *nout, *dst, MPI_UNWEIGHTED);
    return 0;
}

static int complete(int rc, MPI_Request *req)
{
    for (int k = 0; rc == MPI_SUCCESS && k < (form == PERSISTENT ? 2 : 1); k++) {
        if (form == PERSISTENT) rc = MPI_Start(req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    if (form == PERSISTENT && *req != MPI_REQUEST_NULL) MPI_Request_free(req);
    return rc;
}

/* Neighbor_alltoallw from Neighbor_alltoallv's counts and displacements (ints): on odd ranks
 * in pairs of ints (every count here is even there: see layout), displacements in bytes. */
static int call_w(const int *sb, const int *sc, const int *sd, int *rb, const int *rc,
                  const int *rd, MPI_Comm comm)
{
    int nin, nout, weighted, status, odd = rank % 2, per = odd ? 2 : 1;
    MPI_Topo_test(comm, &status);
    if (status == MPI_CART) nin = nout = 2;
    else MPI_Dist_graph_neighbors_count(comm, &nin, &nout, &weighted);
    int n = (nin > nout ? nin : nout) + 1;
    int *wsc = ints((size_t)n), *wrc = ints((size_t)n);
    MPI_Aint *wsd = malloc((size_t)n * sizeof(MPI_Aint)), *wrd = malloc((size_t)n * sizeof(MPI_Aint));
    MPI_Datatype *types = malloc((size_t)n * sizeof(MPI_Datatype));
    for (int i = 0; i < n; i++) types[i] = odd ? pair : MPI_INT;
    for (int i = 0; i < nout; i++) wsc[i] = sc[i] / per, wsd[i] = (MPI_Aint)sd[i] * (MPI_Aint)sizeof(int);
    for (int i = 0; i < nin; i++) wrc[i] = rc[i] / per, wrd[i] = (MPI_Aint)rd[i] * (MPI_Aint)sizeof(int);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc_;
    if (form == NONBLOCKING)
        rc_ = complete(MPI_Ineighbor_alltoallw(sb, wsc, wsd, types, rb, wrc, wrd, types, comm, &q), &q);
    else if (form == PERSISTENT)
        rc_ = complete(MPI_Neighbor_alltoallw_init(sb, wsc, wsd, types, rb, wrc, wrd, types, comm,
                                                   MPI_INFO_NULL, &q), &q);
    else
        rc_ = MPI_Neighbor_alltoallw(sb, wsc, wsd, types, rb, wrc, wrd, types, comm);
    free(wsc), free(wrc), free(wsd), free(wrd), free(types);
    return rc_;
}

/* One neighborhood call in the form -f asks; v: the counts and displacements, else `n`. */
static int call(int coll, const int *sb, int n, const int *sc, const int *sd, int *rb,
                const int *rc, const int *rd, MPI_Comm comm)
{
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Datatype t = MPI_INT;
    MPI_Info info = MPI_INFO_NULL;
    switch (coll) {
    case ALLGATHER:
        if (form == NONBLOCKING) return complete(MPI_Ineighbor_allgather(sb, n, t, rb, n, t, comm, &q), &q);
        if (form == PERSISTENT) return complete(MPI_Neighbor_allgather_init(sb, n, t, rb, n, t, comm, info, &q), &q);
        return MPI_Neighbor_allgather(sb, n, t, rb, n, t, comm);
    case ALLGATHERV:
        if (form == NONBLOCKING) return complete(MPI_Ineighbor_allgatherv(sb, n, t, rb, rc, rd, t, comm, &q), &q);
        if (form == PERSISTENT) return complete(MPI_Neighbor_allgatherv_init(sb, n, t, rb, rc, rd, t, comm, info, &q), &q);
        return MPI_Neighbor_allgatherv(sb, n, t, rb, rc, rd, t, comm);
    case ALLTOALL:
        if (form == NONBLOCKING) return complete(MPI_Ineighbor_alltoall(sb, n, t, rb, n, t, comm, &q), &q);
        if (form == PERSISTENT) return complete(MPI_Neighbor_alltoall_init(sb, n, t, rb, n, t, comm, info, &q), &q);
        return MPI_Neighbor_alltoall(sb, n, t, rb, n, t, comm);
    case ALLTOALLV:
        if (form == NONBLOCKING) return complete(MPI_Ineighbor_alltoallv(sb, sc, sd, t, rb, rc, rd, t, comm, &q), &q);
        if (form == PERSISTENT) return complete(MPI_Neighbor_alltoallv_init(sb, sc, sd, t, rb, rc, rd, t, comm, info, &q), &q);
        return MPI_Neighbor_alltoallv(sb, sc, sd, t, rb, rc, rd, t, comm);
    default:
        return call_w(sb, sc, sd, rb, rc, rd, comm);
    }
}

/* Counts of one side and displacements with a gap of one int after each block; the span. */
static int layout(int coll, int unit, int me, int sending, const int *peers, int n, int *counts,
                  int *displs)
{
    int at = 0;
    for (int i = 0; i < n; i++) {
        int s = sending ? me : peers[i], d = sending ? peers[i] : me;
        /* Neighbor_alltoallw: Neighbor_alltoallv's, in pairs of ints (even counts) */
        counts[i] = coll == ALLGATHERV ? unit * (s % 4)
                    : coll == ALLTOALLV ? unit * ((s + d) % 3)
                    : coll == ALLTOALLW ? 2 * unit * ((s + d) % 3) : unit;
        displs[i] = at;
        at += counts[i] + 1;
    }
    return at;
}

static void test(int coll, MPI_Comm comm, const char *topo, int unit)
{
    int *src, *dst, nin, nout;
    neighbors(comm, &src, &dst, &nin, &nout);
    int *sc = ints((size_t)nout), *sd = ints((size_t)nout), *rc = ints((size_t)nin), *rd = ints((size_t)nin);
    int sspan = layout(coll, unit, rank, 1, dst, nout, sc, sd);
    int rspan = layout(coll, unit, rank, 0, src, nin, rc, rd);
    int per = coll == ALLGATHERV ? unit * (rank % 4) : unit;   /* Neighbor_allgather(v): one block */
    int gather = coll == ALLGATHER || coll == ALLGATHERV;
    int *sb = ints((size_t)sspan), *rb = ints((size_t)rspan);
    for (int i = 0; i < sspan; i++) sb[i] = -5;
    for (int j = 0; j < nout; j++)
        for (int i = 0; i < (gather ? per : sc[j]); i++)
            sb[(gather ? 0 : sd[j]) + i] = val(rank, gather ? -1 : dst[j], i);
    for (int i = 0; i < rspan; i++) rb[i] = -7;
    /* the regular forms pack their blocks: no gaps */
    int regular = coll == ALLGATHER || coll == ALLTOALL;
    if (regular)
        for (int j = 0; j < nin; j++) rd[j] = j * unit;
    if (coll == ALLTOALL)
        for (int j = 0; j < nout; j++)
            for (int i = 0; i < unit; i++) sb[j * unit + i] = val(rank, dst[j], i);
    int err = call(coll, sb, per, sc, sd, rb, rc, rd, comm);
    if (err != MPI_SUCCESS) fail(coll, topo, "return code", 0, err, MPI_SUCCESS);
    calls[coll]++;
    for (int j = 0; j < nin; j++) {
        int n = regular ? unit : rc[j];
        for (int i = 0; i < n; i++) {
            long want = val(src[j], gather ? -1 : rank, i);
            if (rb[rd[j] + i] != want) fail(coll, topo, "block", j * 100000 + i, rb[rd[j] + i], want);
        }
        if (!regular && rb[rd[j] + n] != -7) fail(coll, topo, "gap overwritten", j, rb[rd[j] + n], -7);
    }
    free(src), free(dst), free(sc), free(sd), free(rc), free(rd), free(sb), free(rb);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-f") == 0) {
            const char *f = argv[++i];
            form = strcmp(f, "nonblocking") == 0 ? NONBLOCKING : strcmp(f, "persistent") == 0 ? PERSISTENT : BLOCKING;
        }
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring, graph;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int *src = ints((size_t)size), *dst = ints((size_t)size), nin = 0, nout = 0;
    for (int k = 1; k <= rank % 3 && k < size; k++) dst[nout++] = (rank + k) % size;
    for (int from = 0; from < size; from++)
        for (int k = 1; k <= from % 3 && k < size; k++)
            if ((from + k) % size == rank) src[nin++] = from;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, nin, src, MPI_UNWEIGHTED, nout, dst,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
    free(src), free(dst);
    static const int units[] = {1, 1000};
    for (int c = 0; c < NCOLLS; c++)
        for (int u = 0; u < 2; u++) {
            test(c, ring, "ring", units[u]);
            test(c, graph, "graph", units[u]);
        }
    if (rank == 0)
        for (int c = 0; c < NCOLLS; c++) printf("calls %s all=%ld\n", names[c], calls[c]);
    MPI_Comm_free(&ring);
    MPI_Comm_free(&graph);
    MPI_Type_free(&pair);
    MPI_Finalize();
    return 0;
}

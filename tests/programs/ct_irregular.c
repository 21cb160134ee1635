/*
 * Calls the collectives of the table beyond the ten of the guidelines (Barrier, Exscan,
 * Reduce_local and the irregular forms Gatherv, Scatterv, Allgatherv, Alltoallv, Alltoallw),
 * checks every result exactly and reports its calls, so that a test can run it under every mode
 * of the interposer (learning with every call exploring included) and compare.
 *
 *   ct_irregular [-r REPEAT] [-f blocking|nonblocking|persistent]
 *
 * Each irregular call is made with equal counts, with irregular counts (zeros among them), with
 * MPI_IN_PLACE where the collective allows it, and with a datatype with gaps (vector of ints,
 * stride 2), at every root. Alltoallw also with a datatype per peer that differs between the
 * peers and between sender and receiver (ints and the vector alternating: one type signature).
 * -f: Alltoallv and Alltoallw in that form (MPI_I<coll> + MPI_Wait; MPI_<Coll>_init, MPI_Start +
 * MPI_Wait twice, MPI_Request_free), so that a member of each form is checked too.
 * Rank 0 prints "calls COLL all=N" per collective.
 * Exit status 0 when every result is right; otherwise "FAIL ..." and MPI_Abort.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BARRIER, EXSCAN, REDUCE_LOCAL, GATHERV, SCATTERV, ALLGATHERV, ALLTOALLV, ALLTOALLW, NCOLLS };
static const char *const names[NCOLLS] = {"barrier", "exscan", "reduce_local", "gatherv",
                                          "scatterv", "allgatherv", "alltoallv", "alltoallw"};
static long calls[NCOLLS];
static int rank, size;
static MPI_Datatype vec;   /* one element = 2 ints, the second a gap */
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static int form = BLOCKING;

static void fail(int coll, const char *what, int shape, int root, int i, long got, long want)
{
    fprintf(stderr, "FAIL %s %s rank=%d shape=%d root=%d index=%d got=%ld want=%ld\n",
            names[coll], what, rank, shape, root, i, got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void check_rc(int coll, int rc)
{
    if (rc != MPI_SUCCESS)
        fail(coll, "return code", 0, 0, 0, rc, MPI_SUCCESS);
    calls[coll]++;
}

static int *ints(size_t n)
{
    int *p = calloc(n ? n : 1, sizeof(int));
    if (p == NULL) {
        fprintf(stderr, "FAIL out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return p;
}

/* What rank r sends to rank d at position i of the block, and the block's length. */
static int val(int r, int d, int i) { return r * 100000 + d * 1000 + i + 1; }
/* shape 0: equal counts (5); 1: irregular, zeros among them; 2: everything 0 */
static int count_of(int shape, int from, int to)
{
    if (shape == 0) return 5;
    if (shape == 2) return 0;
    return (from + 2 * to) % 3 == 0 ? 0 : 1 + (from * 7 + to * 3) % 11;
}

/* Displacements in elements with a gap of one element between blocks. */
static void displs_of(const int *counts, int *displs)
{
    int at = 0;
    for (int i = 0; i < size; i++) {
        displs[i] = at;
        at += counts[i] + 1;
    }
}

static int total(const int *counts) { int t = 0; for (int i = 0; i < size; i++) t += counts[i] + 1; return t; }

/* Element i of a buffer of `stride` ints per element (stride 2: the vector type). */
static int *at(int *buf, int i, int stride) { return buf + (size_t)i * stride; }

static void test_gatherv(int shape, int stride, int in_place, int root)
{
    MPI_Datatype t = stride == 1 ? MPI_INT : vec;
    int *counts = ints(size), *displs = ints(size);
    for (int r = 0; r < size; r++) counts[r] = count_of(shape, r, root);
    displs_of(counts, displs);
    int n = counts[rank], whole = total(counts);
    int *send = ints((size_t)n * stride), *recv = ints((size_t)whole * stride);
    for (int i = 0; i < n; i++) *at(send, i, stride) = val(rank, root, i);
    for (int i = 0; i < whole * stride; i++) recv[i] = -7;
    if (in_place && rank == root)
        for (int i = 0; i < n; i++) *at(recv, displs[rank] + i, stride) = val(rank, root, i);
    const void *sb = in_place && rank == root ? MPI_IN_PLACE : send;
    check_rc(GATHERV, MPI_Gatherv(sb, n, t, recv, counts, displs, t, root, MPI_COMM_WORLD));
    if (rank == root)
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < counts[r]; i++)
                if (*at(recv, displs[r] + i, stride) != val(r, root, i))
                    fail(GATHERV, "block", shape, root, i, *at(recv, displs[r] + i, stride), val(r, root, i));
            if (*at(recv, displs[r] + counts[r], stride) != -7)
                fail(GATHERV, "gap overwritten", shape, root, r, *at(recv, displs[r] + counts[r], stride), -7);
        }
    free(send), free(recv), free(counts), free(displs);
}

static void test_scatterv(int shape, int stride, int in_place, int root)
{
    MPI_Datatype t = stride == 1 ? MPI_INT : vec;
    int *counts = ints(size), *displs = ints(size);
    for (int r = 0; r < size; r++) counts[r] = count_of(shape, root, r);
    displs_of(counts, displs);
    int n = counts[rank], whole = total(counts);
    int *send = ints((size_t)whole * stride), *recv = ints((size_t)(n + 1) * stride);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++) *at(send, displs[r] + i, stride) = val(root, r, i);
    for (int i = 0; i < (n + 1) * stride; i++) recv[i] = -7;
    void *rb = in_place && rank == root ? MPI_IN_PLACE : recv;
    check_rc(SCATTERV, MPI_Scatterv(send, counts, displs, t, rb, n, t, root, MPI_COMM_WORLD));
    if (!(in_place && rank == root)) {
        for (int i = 0; i < n; i++)
            if (*at(recv, i, stride) != val(root, rank, i))
                fail(SCATTERV, "block", shape, root, i, *at(recv, i, stride), val(root, rank, i));
        if (*at(recv, n, stride) != -7) fail(SCATTERV, "past the block", shape, root, n, *at(recv, n, stride), -7);
    }
    free(send), free(recv), free(counts), free(displs);
}

static void test_allgatherv(int shape, int stride, int in_place)
{
    MPI_Datatype t = stride == 1 ? MPI_INT : vec;
    int *counts = ints(size), *displs = ints(size);
    for (int r = 0; r < size; r++) counts[r] = count_of(shape, r, 0);
    displs_of(counts, displs);
    int n = counts[rank], whole = total(counts);
    int *send = ints((size_t)n * stride), *recv = ints((size_t)whole * stride);
    for (int i = 0; i < n; i++) *at(send, i, stride) = val(rank, 0, i);
    for (int i = 0; i < whole * stride; i++) recv[i] = -7;
    if (in_place)
        for (int i = 0; i < n; i++) *at(recv, displs[rank] + i, stride) = val(rank, 0, i);
    check_rc(ALLGATHERV, MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, n, t, recv, counts,
                                        displs, t, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < counts[r]; i++)
            if (*at(recv, displs[r] + i, stride) != val(r, 0, i))
                fail(ALLGATHERV, "block", shape, -1, i, *at(recv, displs[r] + i, stride), val(r, 0, i));
        if (*at(recv, displs[r] + counts[r], stride) != -7)
            fail(ALLGATHERV, "gap overwritten", shape, -1, r, *at(recv, displs[r] + counts[r], stride), -7);
    }
    free(send), free(recv), free(counts), free(displs);
}

/* A started call (MPI_I<coll>, MPI_<Coll>_init) completed as -f asks. */
static int complete(int rc_, MPI_Request *req)
{
    for (int k = 0; rc_ == MPI_SUCCESS && k < (form == PERSISTENT ? 2 : 1); k++) {
        if (form == PERSISTENT) rc_ = MPI_Start(req);
        if (rc_ == MPI_SUCCESS) rc_ = MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    if (form == PERSISTENT && *req != MPI_REQUEST_NULL) MPI_Request_free(req);
    return rc_;
}

static int alltoallv(const void *sb, const int *sc, const int *sd, MPI_Datatype t, void *recv,
                     const int *rc, const int *rd)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (form == NONBLOCKING)
        return complete(MPI_Ialltoallv(sb, sc, sd, t, recv, rc, rd, t, MPI_COMM_WORLD, &req), &req);
    if (form == PERSISTENT)
        return complete(MPI_Alltoallv_init(sb, sc, sd, t, recv, rc, rd, t, MPI_COMM_WORLD,
                                           MPI_INFO_NULL, &req), &req);
    return MPI_Alltoallv(sb, sc, sd, t, recv, rc, rd, t, MPI_COMM_WORLD);
}

static int alltoallw(const void *sb, const int *sc, const int *sd, const MPI_Datatype *st,
                     void *recv, const int *rc, const int *rd, const MPI_Datatype *rt)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (form == NONBLOCKING)
        return complete(MPI_Ialltoallw(sb, sc, sd, st, recv, rc, rd, rt, MPI_COMM_WORLD, &req), &req);
    if (form == PERSISTENT)
        return complete(MPI_Alltoallw_init(sb, sc, sd, st, recv, rc, rd, rt, MPI_COMM_WORLD,
                                           MPI_INFO_NULL, &req), &req);
    return MPI_Alltoallw(sb, sc, sd, st, recv, rc, rd, rt, MPI_COMM_WORLD);
}

/* Alltoallw's datatype of the block between this rank and `peer`: all `t` (mixed 0), or ints and
 * the vector alternating by peer, sending and receiving the other way round (mixed 1). */
static MPI_Datatype w_type(int mixed, MPI_Datatype t, int peer, int sending)
{
    if (!mixed) return t;
    return (peer + rank + sending) % 2 ? vec : MPI_INT;
}

/* Alltoallv, or Alltoallw with byte displacements and a datatype per peer (`mixed`: w_type). In
 * place needs symmetric counts (sendcounts[j] on i == sendcounts[i] on j): shape 0 and 2 only.
 * Buffers hold 2 ints per element of the counts (the vector's extent), so a block of either
 * type fits its region; every int of a region that no element covers must keep its contents. */
static void test_alltoall(int w, int shape, int stride, int in_place, int mixed)
{
    int coll = w ? ALLTOALLW : ALLTOALLV;
    MPI_Datatype t = stride == 1 ? MPI_INT : vec;
    int *sc = ints(size), *sd = ints(size), *rc = ints(size), *rd = ints(size);
    int *sx = ints(size), *rx = ints(size);   /* displacements in the call's units */
    MPI_Datatype *stypes = malloc((size_t)size * sizeof *stypes);
    MPI_Datatype *rtypes = malloc((size_t)size * sizeof *rtypes);
    for (int d = 0; d < size; d++) {
        sc[d] = count_of(shape, rank, d), rc[d] = count_of(shape, d, rank);
        rtypes[d] = w_type(mixed, t, d, 0);
        stypes[d] = in_place ? rtypes[d] : w_type(mixed, t, d, 1);
    }
    displs_of(sc, sd);
    displs_of(rc, rd);
    int sw = total(sc), rw = total(rc);
    int *send = ints((size_t)sw * 2), *recv = ints((size_t)rw * 2);
    for (int d = 0; d < size; d++)
        for (int i = 0; i < sc[d]; i++)
            *at(send + (size_t)sd[d] * 2, i, stypes[d] == vec ? 2 : 1) = val(rank, d, i);
    for (int i = 0; i < rw * 2; i++) recv[i] = -7;
    if (in_place)
        for (int d = 0; d < size; d++)
            for (int i = 0; i < rc[d]; i++)
                *at(recv + (size_t)rd[d] * 2, i, rtypes[d] == vec ? 2 : 1) = val(rank, d, i);
    const void *sb = in_place ? MPI_IN_PLACE : send;
    int rc_;
    if (w) {
        for (int d = 0; d < size; d++)
            sx[d] = sd[d] * 2 * (int)sizeof(int), rx[d] = rd[d] * 2 * (int)sizeof(int);
        rc_ = alltoallw(sb, sc, sx, stypes, recv, rc, rx, rtypes);
    } else {   /* in extents of t: 2 ints per element are 2 MPI_INT or 1 vector */
        for (int d = 0; d < size; d++) sx[d] = sd[d] * 2 / stride, rx[d] = rd[d] * 2 / stride;
        rc_ = alltoallv(sb, sc, sx, t, recv, rc, rx);
    }
    check_rc(coll, rc_);
    /* a persistent request is started twice: in place, the second exchange undoes the first */
    int back = form == PERSISTENT && in_place;
    for (int s = 0; s < size; s++) {
        int *block = recv + (size_t)rd[s] * 2, step = rtypes[s] == vec ? 2 : 1;
        for (int i = 0; i < 2 * (rc[s] + 1); i++) {
            int covered = i % step == 0 && i / step < rc[s];
            long want = !covered ? -7 : back ? val(rank, s, i / step) : val(s, rank, i / step);
            if (block[i] != want)
                fail(coll, covered ? "block" : "gap overwritten", shape, -1, i, block[i], want);
        }
    }
    free(send), free(recv), free(sc), free(sd), free(rc), free(rd), free(sx), free(rx);
    free(stypes), free(rtypes);
}

/* Exscan and Reduce_local with MPI_SUM on ints (exact) and a non-commutative user op. */
static void keep_left_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

static void test_exscan(int n, int in_place, MPI_Op op, int left)
{
    int *send = ints((size_t)n), *recv = ints((size_t)n);
    for (int i = 0; i < n; i++) send[i] = val(rank, 0, i), recv[i] = in_place ? send[i] : -7;
    check_rc(EXSCAN, MPI_Exscan(in_place ? MPI_IN_PLACE : send, recv, n, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; rank > 0 && i < n; i++) {
        long want = 0;
        for (int r = 0; r < rank; r++) want += val(r, 0, i);
        if (left) want = val(0, 0, i);
        if (recv[i] != want) fail(EXSCAN, "prefix", n, -1, i, recv[i], want);
    }
    free(send), free(recv);
}

static void test_reduce_local(int n, MPI_Op op, int left)
{
    int *in = ints((size_t)n), *io = ints((size_t)n);
    for (int i = 0; i < n; i++) in[i] = val(rank, 1, i), io[i] = val(rank, 2, i);
    check_rc(REDUCE_LOCAL, MPI_Reduce_local(in, io, n, MPI_INT, op));
    for (int i = 0; i < n; i++) {
        long want = left ? val(rank, 1, i) : (long)val(rank, 1, i) + val(rank, 2, i);
        if (io[i] != want) fail(REDUCE_LOCAL, "result", n, -1, i, io[i], want);
    }
    free(in), free(io);
}

int main(int argc, char **argv)
{
    int repeat = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-r") == 0) repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "-f") == 0) {
            const char *f = argv[++i];
            form = strcmp(f, "nonblocking") == 0 ? NONBLOCKING : strcmp(f, "persistent") == 0 ? PERSISTENT : BLOCKING;
        }
    MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
    MPI_Datatype tmp = vec;
    MPI_Type_create_resized(tmp, 0, 2 * (MPI_Aint)sizeof(int), &vec);
    MPI_Type_free(&tmp);
    MPI_Type_commit(&vec);
    MPI_Op keep_left;
    MPI_Op_create(keep_left_fn, 0, &keep_left);
    for (int rep = 0; rep < repeat; rep++) {
        check_rc(BARRIER, MPI_Barrier(MPI_COMM_WORLD));
        for (int shape = 0; shape < 3; shape++)
            for (int stride = 1; stride <= 2; stride++)
                for (int ip = 0; ip < 2; ip++) {
                    for (int root = 0; root < size; root++) {
                        test_gatherv(shape, stride, ip, root);
                        test_scatterv(shape, stride, ip, root);
                    }
                    test_allgatherv(shape, stride, ip);
                    if (!ip || shape != 1) {   /* in place: symmetric counts only */
                        test_alltoall(0, shape, stride, ip, 0);
                        test_alltoall(1, shape, stride, ip, stride == 2);
                    }
                }
        static const int ns[] = {0, 1, 7, 1000};
        for (int k = 0; k < 4; k++) {
            for (int ip = 0; ip < 2; ip++) {
                test_exscan(ns[k], ip, MPI_SUM, 0);
                test_exscan(ns[k], ip, keep_left, 1);
            }
            test_reduce_local(ns[k], MPI_SUM, 0);
            test_reduce_local(ns[k], keep_left, 1);
        }
        check_rc(BARRIER, MPI_Barrier(MPI_COMM_WORLD));
    }
    if (rank == 0)
        for (int c = 0; c < NCOLLS; c++) printf("calls %s all=%ld\n", names[c], calls[c]);
    MPI_Op_free(&keep_left);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return 0;
}

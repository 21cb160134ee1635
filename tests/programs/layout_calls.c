/* Allgather, Bcast and Allgatherv whose ranks pass different layouts of one type signature: the
 * vector(2, 1, 2, MPI_INT) on even ranks, twice as many MPI_INT on odd ranks (legal MPI: the
 * signatures match block by block). MPICH 5.0.2's own MPI_Allgather and MPI_Bcast serve it at
 * every size; its MPI_Allgatherv only where it does not pick its ring (docs/variants.md, "MPICH's
 * Allgatherv ring"), so a mock-up or member that handed these layouts to that ring would change
 * the outcome (tests/test_layouts.py).
 *
 *   layout_calls N[,N...] [M[,M...]]
 *
 * N: elements per block of Allgather and of Bcast (root 0 and the last rank); M: of Allgatherv
 * (equal blocks). Every rank checks every element it received and the vector's gaps (which must
 * keep their fill), and prints one line per call: `rank R CALL N ok` or `... wrong at I`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GAP (-7)

typedef struct layout {
    MPI_Datatype type;
    int per;    /* elements of `type` per element of the signature's pairs */
    int ints;   /* ints of extent per element of `type` */
    int odd;
} layout;

/* The value of signature int k of rank r's block. */
static int value(int r, long k)
{
    return (int)(r * 1000003L + k * 7L + 1);
}

/* Write or check `n` pairs (2 n signature ints) of rank r's block at `buf` in this rank's layout:
 * returns -1 or the first signature int that differs (a gap that changed counts as its pair). */
static long block(const layout *l, int *buf, int r, long n, int write)
{
    for (long k = 0; k < 2 * n; k++) {
        /* the vector holds int 0 and int 2 of every 3 (extent 12 bytes: a gap at int 1) */
        long at = l->odd ? k : k / 2 * 3 + (k % 2) * 2;
        if (write)
            buf[at] = value(r, k);
        else if (buf[at] != value(r, k))
            return k;
        if (!l->odd && k % 2 == 0 && !write && buf[at + 1] != GAP)
            return k;
    }
    return -1;
}

static int *filled(long ints)
{
    int *buf = malloc((size_t)ints * sizeof *buf);
    for (long i = 0; i < ints; i++)
        buf[i] = GAP;
    return buf;
}

static void report(int rank, const char *call, long n, long wrong)
{
    if (wrong < 0)
        printf("rank %d %s %ld ok\n", rank, call, n);
    else
        printf("rank %d %s %ld wrong at %ld\n", rank, call, n, wrong);
}

static void allgather(const layout *l, int rank, int p, long n, int v)
{
    long ints = 3 * n;   /* one block's extent in ints, the larger layout's */
    int count = (int)(l->per * n);
    int *send = filled(ints), *recv = filled(ints * p);
    block(l, send, rank, n, 1);
    long wrong = -1;
    if (v) {
        int *counts = malloc(p * sizeof *counts), *displs = malloc(p * sizeof *displs);
        for (int i = 0; i < p; i++)
            counts[i] = count, displs[i] = i * count;
        MPI_Allgatherv(send, count, l->type, recv, counts, displs, l->type, MPI_COMM_WORLD);
        free(counts), free(displs);
    } else {
        MPI_Allgather(send, count, l->type, recv, count, l->type, MPI_COMM_WORLD);
    }
    long stride = (long)count * l->ints;
    for (int r = 0; r < p && wrong < 0; r++)
        if ((wrong = block(l, recv + r * stride, r, n, 0)) >= 0)
            wrong += r * 2 * n;
    report(rank, v ? "allgatherv" : "allgather", n, wrong);
    free(send), free(recv);
}

static void bcast(const layout *l, int rank, int root, long n)
{
    int *buf = filled(3 * n);
    if (rank == root)
        block(l, buf, root, n, 1);
    MPI_Bcast(buf, (int)(l->per * n), l->type, root, MPI_COMM_WORLD);
    report(rank, root == 0 ? "bcast0" : "bcast_last", n, block(l, buf, root, n, 0));
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Datatype vector;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
    MPI_Type_commit(&vector);
    layout l = {rank % 2 ? MPI_INT : vector, rank % 2 ? 2 : 1, rank % 2 ? 1 : 3, rank % 2};
    for (char *s = argc > 1 ? strtok(argv[1], ",") : NULL; s; s = strtok(NULL, ",")) {
        long n = atol(s);
        allgather(&l, rank, p, n, 0);
        bcast(&l, rank, 0, n);
        bcast(&l, rank, p - 1, n);
    }
    for (char *s = argc > 2 ? strtok(argv[2], ",") : NULL; s; s = strtok(NULL, ","))
        allgather(&l, rank, p, atol(s), 1);
    MPI_Type_free(&vector);
    MPI_Finalize();
    return 0;
}

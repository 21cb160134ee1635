/*
 * Collectives interleaved over several communicators of different sizes (world, a dup that is
 * freed and replaced by a dup of a split, a split in reversed rank order, a two-rank split),
 * every result checked exactly. Under the learning mode every call draws a member from its
 * communicator's own counter: ranks that drew differently would hang or compute a wrong result.
 *
 *   learn_comms [ROUNDS]      prints "learn_comms ok calls=N" on rank 0 (N: its calls)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 300
static long calls;

static void fail(const char *what, int got, int want)
{
    fprintf(stderr, "FAIL %s: got %d want %d\n", what, got, want);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One round of four collectives on `comm`; `salt` varies counts and roots between rounds. */
static void round_on(MPI_Comm comm, int salt)
{
    if (comm == MPI_COMM_NULL)
        return;
    int rank, size, n = 1 + (salt * 37) % N;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int root = salt % size;
    static int a[N], b[N * 8];
    for (int i = 0; i < n; i++)
        a[i] = rank + i;
    MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < n; i++)
        if (a[i] != size * (size - 1) / 2 + size * i)
            fail("allreduce", a[i], size * (size - 1) / 2 + size * i);
    for (int i = 0; i < n; i++)
        a[i] = rank == root ? salt + i : -1;
    MPI_Bcast(a, n, MPI_INT, root, comm);
    for (int i = 0; i < n; i++)
        if (a[i] != salt + i)
            fail("bcast", a[i], salt + i);
    int m = n < N / 8 ? n : N / 8;
    for (int i = 0; i < m; i++)
        a[i] = rank * 1000 + i;
    MPI_Allgather(a, m, MPI_INT, b, m, MPI_INT, comm);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < m; i++)
            if (b[r * m + i] != r * 1000 + i)
                fail("allgather", b[r * m + i], r * 1000 + i);
    for (int i = 0; i < n; i++)
        a[i] = 1;
    MPI_Reduce(rank == root ? MPI_IN_PLACE : a, a, n, MPI_INT, MPI_SUM, root, comm);
    if (rank == root)
        for (int i = 0; i < n; i++)
            if (a[i] != size)
                fail("reduce", a[i], size);
    calls += 4;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 20, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup, parity, pair;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &parity);  /* reversed rank order */
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, 0, &pair);
    MPI_Comm comms[4] = {MPI_COMM_WORLD, dup, parity, pair};
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 4; k++)
            round_on(comms[(k + r) % 4], r * 4 + k);   /* a different interleaving each round */
        if (r == rounds / 2) {   /* a new communicator in place of a freed one */
            MPI_Comm_free(&dup);
            MPI_Comm_dup(parity, &dup);
            comms[1] = dup;
        }
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&parity);
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    if (rank == 0)
        printf("learn_comms ok calls=%ld\n", calls);
    MPI_Finalize();
    return 0;
}

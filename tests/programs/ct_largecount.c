/*
 * The MPI-4 large-count bindings (MPI_Allreduce_c, ...) of the 10 collectives, with counts that
 * fit an int (the interposer serves them like the int bindings) and one that does not fit in an
 * ignored argument (a non-root's recvcount of MPI_Gather_c: must not change the decision).
 *
 *   ct_largecount      rank 0 prints "largecount calls N" (or exits 77 without MPI-4)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

#if MPI_VERSION >= 4
static void check(const char *what, int ok, long got, long want)
{
    if (!ok) {
        fprintf(stderr, "FAIL %s rank=%d got=%ld want=%ld\n", what, rank, got, want);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    enum { N = 100 };
    MPI_Comm comm = MPI_COMM_WORLD;
    int *s = malloc((size_t)size * N * sizeof(int)), *r = malloc((size_t)size * N * sizeof(int));
    MPI_Count *rc = malloc((size_t)size * sizeof(MPI_Count));
    long calls = 0;
    int root = size - 1;
    for (int i = 0; i < size * N; i++) s[i] = rank * 1000 + i;

    MPI_Allreduce_c(s, r, N, MPI_INT, MPI_SUM, comm); calls++;
    for (int i = 0; i < N; i++) check("allreduce_c", r[i] == size * i + 1000 * size * (size - 1) / 2, r[i], 0);

    MPI_Allgather_c(s, N, MPI_INT, r, N, MPI_INT, comm); calls++;
    for (int q = 0; q < size; q++) for (int i = 0; i < N; i++) check("allgather_c", r[q * N + i] == q * 1000 + i, r[q * N + i], q * 1000 + i);

    MPI_Alltoall_c(s, N, MPI_INT, r, N, MPI_INT, comm); calls++;
    for (int q = 0; q < size; q++) for (int i = 0; i < N; i++) check("alltoall_c", r[q * N + i] == q * 1000 + rank * N + i, r[q * N + i], q * 1000 + rank * N + i);

    for (int i = 0; i < N; i++) r[i] = rank == root ? 5 * i : -1;
    MPI_Bcast_c(r, N, MPI_INT, root, comm); calls++;
    for (int i = 0; i < N; i++) check("bcast_c", r[i] == 5 * i, r[i], 5 * i);

    /* non-roots pass a recvcount that does not fit an int: ignored there, so no effect */
    MPI_Gather_c(s, N, MPI_INT, r, rank == root ? N : ((MPI_Count)1 << 40), MPI_INT, root, comm); calls++;
    if (rank == root) for (int q = 0; q < size; q++) for (int i = 0; i < N; i++) check("gather_c", r[q * N + i] == q * 1000 + i, r[q * N + i], q * 1000 + i);

    MPI_Scatter_c(s, rank == root ? N : ((MPI_Count)1 << 40), MPI_INT, r, N, MPI_INT, root, comm); calls++;
    for (int i = 0; i < N; i++) check("scatter_c", r[i] == root * 1000 + rank * N + i, r[i], root * 1000 + rank * N + i);

    MPI_Reduce_c(s, r, N, MPI_INT, MPI_SUM, root, comm); calls++;
    if (rank == root) for (int i = 0; i < N; i++) check("reduce_c", r[i] == size * i + 1000 * size * (size - 1) / 2, r[i], 0);

    MPI_Reduce_scatter_block_c(s, r, N, MPI_INT, MPI_SUM, comm); calls++;
    for (int i = 0; i < N; i++) { int j = rank * N + i; check("reduce_scatter_block_c", r[i] == size * j + 1000 * size * (size - 1) / 2, r[i], 0); }

    for (int q = 0; q < size; q++) rc[q] = N;
    MPI_Reduce_scatter_c(s, r, rc, MPI_INT, MPI_SUM, comm); calls++;
    for (int i = 0; i < N; i++) { int j = rank * N + i; check("reduce_scatter_c", r[i] == size * j + 1000 * size * (size - 1) / 2, r[i], 0); }

    MPI_Scan_c(s, r, N, MPI_INT, MPI_SUM, comm); calls++;
    for (int i = 0; i < N; i++) check("scan_c", r[i] == (rank + 1) * i + 1000 * rank * (rank + 1) / 2, r[i], 0);

    if (rank == 0) printf("largecount calls %ld\n", calls);
    free(s); free(r); free(rc);
    MPI_Finalize();
    return 0;
#else
    if (rank == 0) printf("SKIP no MPI-4 large-count bindings (MPI_VERSION %d)\n", MPI_VERSION);
    MPI_Finalize();
    return 77;
#endif
}

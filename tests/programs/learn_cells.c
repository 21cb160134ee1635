/*
 * The spread of the learning mode's budget over cells (docs/select.md): phases of one kind of
 * call each, as applications have them (HPCC calls alltoall long before anything else), so a
 * budget counted per communicator only would go to the first phase. Every result is checked;
 * the test counts explored calls per (communicator, collective, size) in each rank's trace.
 *
 *   learn_cells N     prints "learn_cells ok" on rank 0
 *
 * On MPI_COMM_WORLD, N calls each of: allreduce of 1 int (4 bytes), bcast of 1 int, allreduce
 * of 256 ints (1024 bytes), bcast of 256 ints; then N allreduces of 1 int on a dup of it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "learn_cells FAIL: " __VA_ARGS__);                               \
            fputc('\n', stderr);                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                    \
        }                                                                                    \
    } while (0)

static int in[256], out[256];

static void allreduces(MPI_Comm comm, int n, int count, int rank, int size)
{
    for (int it = 0; it < n; it++) {
        for (int i = 0; i < count; i++) {
            in[i] = (rank + 1) * (i + it);
            out[i] = -1;
        }
        MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < count; i++)
            CHECK(out[i] == size * (size + 1) / 2 * (i + it), "allreduce %d of %d ints, "
                  "element %d: %d", it, count, i, out[i]);
    }
}

static void bcasts(MPI_Comm comm, int n, int count, int rank)
{
    for (int it = 0; it < n; it++) {
        for (int i = 0; i < count; i++)
            out[i] = rank == 0 ? 7 * it + i : -1;
        MPI_Bcast(out, count, MPI_INT, 0, comm);
        for (int i = 0; i < count; i++)
            CHECK(out[i] == 7 * it + i, "bcast %d of %d ints, element %d: %d", it, count, i,
                  out[i]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 20;
    allreduces(MPI_COMM_WORLD, n, 1, rank, size);
    bcasts(MPI_COMM_WORLD, n, 1, rank);
    allreduces(MPI_COMM_WORLD, n, 256, rank, size);
    bcasts(MPI_COMM_WORLD, n, 256, rank);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    allreduces(dup, n, 1, rank, size);
    MPI_Comm_free(&dup);
    if (rank == 0)
        printf("learn_cells ok\n");
    MPI_Finalize();
    return 0;
}

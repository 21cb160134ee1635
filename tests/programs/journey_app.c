/*
 * A small application for the user's journey (tests/test_journey.py, docs/first-hour.md): the
 * collectives and sizes of the journey's check (allreduce and gather, 8 B to 32 KiB), every
 * result checked against the value it must have, so that a run under a profile that served a
 * call wrongly fails.
 *
 *   journey_app [ITERATIONS]     prints "journey_app ok <ranks>" on rank 0; exit 1 on a wrong result
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_INTS 8192 /* 32 KiB */

static int fail(const char *what, int rank)
{
    fprintf(stderr, "journey_app FAIL on rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 50;
    static int in[MAX_INTS], out[MAX_INTS];
    int *gathered = malloc(sizeof(int) * 2 * (size_t)size);
    const int counts[] = {2, 256, MAX_INTS}; /* 8 B, 1 KiB, 32 KiB */
    for (int it = 0; it < iterations; it++) {
        for (int c = 0; c < 3; c++) {
            for (int i = 0; i < counts[c]; i++)
                in[i] = rank + i + it;
            MPI_Allreduce(in, out, counts[c], MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < counts[c]; i++)
                if (out[i] != size * (i + it) + size * (size - 1) / 2)
                    return fail("allreduce", rank);
        }
        int mine[2] = {rank, it};
        MPI_Gather(mine, 2, MPI_INT, gathered, 2, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (int r = 0; r < size; r++)
                if (gathered[2 * r] != r || gathered[2 * r + 1] != it)
                    return fail("gather", rank);
    }
    if (rank == 0)
        printf("journey_app ok %d\n", size);
    free(gathered);
    MPI_Finalize();
    return 0;
}

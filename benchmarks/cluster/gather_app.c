/*
 * A stand-in application for the learning benchmark (README.md, "Learning per layout"):
 * ITER MPI_Gather of COUNT ints per rank to rank 0, every result checked on the root.
 *
 *   gather_app [ITER [COUNT]]        default 400 iterations of 8192 ints (32 KiB per rank)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iter = argc > 1 ? atoi(argv[1]) : 400, count = argc > 2 ? atoi(argv[2]) : 8192;
    int *mine = malloc((size_t)count * sizeof *mine);
    int *all = rank == 0 ? malloc((size_t)count * size * sizeof *all) : NULL;
    for (int it = 0; it < iter; it++) {
        for (int i = 0; i < count; i++)
            mine[i] = rank * 1000003 + it * 7 + i;
        MPI_Gather(mine, count, MPI_INT, all, count, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (int r = 0; r < size; r++)
                for (int i = 0; i < count; i++)
                    bad += all[(size_t)r * count + i] != r * 1000003 + it * 7 + i;
    }
    if (rank == 0)
        printf("gather_app %s\n", bad ? "FAIL" : "ok");
    free(mine);
    free(all);
    MPI_Finalize();
    return bad != 0;
}

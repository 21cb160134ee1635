/*
 * Phases of app.c, cumulative, for locating SimGrid's own cost (README, "4096 ranks"): 0 MPI_Init
 * and MPI_Finalize, 1 + the MPI_Comm_split, 2 + one 8-byte MPI_Allreduce on MPI_COMM_WORLD.
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int upto = argc > 1 ? atoi(argv[1]) : 2, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm group = MPI_COMM_NULL;
    if (upto >= 1)
        MPI_Comm_split(MPI_COMM_WORLD, rank / 16, rank, &group);
    if (upto >= 2) {
        long long mine = rank, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    if (group != MPI_COMM_NULL)
        MPI_Comm_free(&group);
    MPI_Finalize();
    return 0;
}

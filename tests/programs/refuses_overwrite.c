/*
 * An application that refuses to overwrite its own output file, as ExaML and RAxML do: the
 * first run in a directory writes refuses.out, every later one stops with exit status 1.
 * tests/test_journey.py: `advise --verify` must say that the rerun failed and how to wrap it.
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, exists = 0, one = 1, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        exists = access("refuses.out", F_OK) == 0;
    MPI_Bcast(&exists, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (exists) {
        if (rank == 0)
            fprintf(stderr, "refuses_overwrite: refuses.out exists, will not overwrite it\n");
        MPI_Finalize();
        return 1;
    }
    for (int i = 0; i < 20; i++)
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen("refuses.out", "w");
        fprintf(f, "%d\n", sum);
        fclose(f);
    }
    MPI_Finalize();
    return 0;
}

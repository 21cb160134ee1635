/* A C application whose own helper wraps MPI (tests/test_advise_layers.py): comm_sum() has one
 * caller, so the data cannot tell it is a layer; `--layer 'comm_*'` names it. Per rank:
 * energy() 6 x comm_sum (LINE_E), main 3 x MPI_Bcast directly (LINE_M). */
#include <mpi.h>
#include <stdio.h>

__attribute__((noinline)) static double comm_sum(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

__attribute__((noinline)) static double energy(int steps)
{
    double e = 0;
    for (int i = 0; i < steps; i++)
        e += comm_sum(1.0); /* LINE_E */
    return e;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double e = energy(6), b = rank;
    for (int i = 0; i < 3; i++)
        MPI_Bcast(&b, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* LINE_M */
    MPI_Finalize();
    if (rank == 0)
        printf("energy %g\n", e + b);
    return 0;
}

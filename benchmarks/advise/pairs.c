/* ExaML's communication in miniature (benchmarks/advise): pairs of MPI_Reduce of 2 doubles to
 * root 0 and MPI_Bcast of the reduce's result from root 0, from two call sites, nothing in
 * between, 2 ranks.
 *   pairs [N]               N pairs (default 100000): the profiling mode's call path under
 *                           callgrind (overhead.py --callgrind --apps pairs)
 *   pairs N BLOCKS          BLOCKS rounds of N pairs through MPI_* (libcolltune's wrappers) and
 *                           N through PMPI_* (the library directly), in alternating order; rank 0
 *                           prints each block's seconds: "block mpi|pmpi SECONDS" (both kinds of
 *                           block see the same load, so their difference per pair is the
 *                           wrappers' cost on the round trip, overhead.py --percall) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double pair_mpi(double *x, double *y)
{
    MPI_Reduce(x, y, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(y, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return y[0];
}

static double pair_pmpi(double *x, double *y)
{
    PMPI_Reduce(x, y, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Bcast(y, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return y[0];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 100000;
    long blocks = argc > 2 ? atol(argv[2]) : 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x[2] = {rank + 1.0, 1.0}, y[2] = {0, 0}, sum = 0;
    if (blocks == 0) {
        for (long i = 0; i < n; i++)
            sum += pair_mpi(x, y);
        if (rank == 0)
            printf("pairs %ld sum %.1f\n", n, sum);
    }
    for (long b = 0; b < blocks; b++) {
        for (int k = 0; k < 2; k++) {
            int mpi = (b + k) % 2 == 0;
            PMPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long i = 0; i < n; i++)
                sum += mpi ? pair_mpi(x, y) : pair_pmpi(x, y);
            double t = MPI_Wtime() - t0;
            if (rank == 0)
                printf("block %s %.9f\n", mpi ? "mpi" : "pmpi", t);
        }
    }
    if (blocks > 0 && rank == 0)
        printf("pairs %ld sum %.1f\n", n * blocks * 2, sum);
    MPI_Finalize();
    return 0;
}

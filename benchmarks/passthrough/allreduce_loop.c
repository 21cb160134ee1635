/*
 * Tight loops of 8-byte MPI_Allreduce (one double, MPI_SUM) on MPI_COMM_WORLD.
 *
 *   allreduce_loop CALLS BLOCKS
 *
 * Each block times CALLS calls of MPI_Allreduce and CALLS calls of PMPI_Allreduce, in an order
 * that alternates between blocks; rank 0 prints "block B mpi_ns X pmpi_ns Y" (per call).
 * Under LD_PRELOAD=libcolltune.so, MPI_Allreduce is the interposer's wrapper and PMPI_Allreduce
 * the library itself, so X - Y is the wrapper's cost measured in the same process, moments
 * apart; without the preload both are the library (an A/A control).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double timed(int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm),
                    long calls, double *sink)
{
    double in = 1.0, out = 0.0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < calls; i++)
        allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    *sink += out;
    return (t1 - t0) * 1e9 / (double)calls;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long calls = argc > 1 ? atol(argv[1]) : 2000;
    int blocks = argc > 2 ? atoi(argv[2]) : 100;
    double sink = 0.0;
    timed(PMPI_Allreduce, calls, &sink);   /* warm-up */
    for (int b = 0; b < blocks; b++) {
        double mpi_ns, pmpi_ns;
        if (b % 2 == 0) {
            mpi_ns = timed(MPI_Allreduce, calls, &sink);
            pmpi_ns = timed(PMPI_Allreduce, calls, &sink);
        } else {
            pmpi_ns = timed(PMPI_Allreduce, calls, &sink);
            mpi_ns = timed(MPI_Allreduce, calls, &sink);
        }
        if (rank == 0)
            printf("block %d mpi_ns %.3f pmpi_ns %.3f\n", b, mpi_ns, pmpi_ns);
    }
    /* every call summed 1.0 over all ranks */
    if (sink != (double)size * (double)(2 * blocks + 1)) {
        fprintf(stderr, "FAIL wrong allreduce result %g\n", sink);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return 0;
}

/* A point-to-point-heavy code in miniature (tests/test_advise_profile.py, the budget;
 * benchmarks/advise, the sampling synchronisation's cost): a finite-volume solver's step is a
 * halo exchange with both neighbours of a ring (two MPI_Sendrecv of 8 doubles) and two small
 * MPI_Allreduce (a CG iteration's dot products).
 *   advise_halo STEPS            STEPS steps as above (2 point-to-point calls per collective)
 *   advise_halo STEPS REDUCTIONS phased: STEPS halo exchanges first, then REDUCTIONS
 *                                MPI_Allreduce of 8 bytes (the budget test: the profiling run's
 *                                own cost is over its budget before the first sampled call)
 * Rank 0 prints "halo SUM": the same in every run (the interposer never changes results). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void exchange(double *send, double *left, double *right, int prev, int next)
{
    MPI_Sendrecv(send, 8, MPI_DOUBLE, next, 1, left, 8, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(send, 8, MPI_DOUBLE, prev, 2, right, 8, MPI_DOUBLE, next, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

static double dot(double x)
{
    double y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    long reductions = argc > 2 ? atol(argv[2]) : -1;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int prev = (rank + size - 1) % size, next = (rank + 1) % size;
    double send[8], left[8], right[8], sum = 0;
    for (int i = 0; i < 8; i++)
        send[i] = rank + i;
    for (long s = 0; s < steps; s++) {
        exchange(send, left, right, prev, next);
        sum += left[0] + right[7];
        if (reductions < 0) {
            double a = dot(left[1]);
            sum += a / dot(right[2] + a);   /* the second reads the first's result */
        }
    }
    for (long r = 0; r < reductions; r++)
        sum += dot(1.0);
    if (rank == 0)
        printf("halo %.1f\n", sum);
    MPI_Finalize();
    return 0;
}

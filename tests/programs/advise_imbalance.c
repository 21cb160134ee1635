/* Plants load imbalance: before each of 64 MPI_Allreduce of 8 bytes, rank 1 computes 20 ms longer
 * than rank 0, so rank 0 spends nearly all its collective time waiting for rank 1; the
 * collective's own cost is microseconds. No algorithm can remove that wait. */
#include <mpi.h>
#include <time.h>

static void compute(double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) + 1e-9 * (t.tv_nsec - t0.tv_nsec) < seconds);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank, sum;
    for (int i = 0; i < 64; i++) {
        compute(rank == 1 ? 0.0205 : 0.0005);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

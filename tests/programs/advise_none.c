/* Plants nothing: 0.2 s of computation per rank, a few small collectives and small messages
 * (below every eager threshold). Run bound one rank per core, nothing should be advised. */
#include <mpi.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    volatile double x = 0;
    for (int step = 0; step < 10; step++) {
        double t0 = now();
        while (now() - t0 < 0.02)
            x += 1e-9;
        double v = x, sum;
        MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        char msg[64] = {0};
        MPI_Sendrecv_replace(msg, 64, MPI_CHAR, (rank + 1) % size, 0, (rank + size - 1) % size, 0,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(msg, 64, MPI_CHAR, (rank + 1) % size, 1, MPI_COMM_WORLD);
        MPI_Recv(msg, 64, MPI_CHAR, (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}

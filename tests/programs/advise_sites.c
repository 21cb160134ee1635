/* Known calls from known functions, for the profiling mode's exact counts and call sites:
 * 20 Bcast of 1024 bytes from site_bcast, 30 Allreduce of 8 bytes from site_allreduce, and
 * rank 0 sends rank 1 five messages of 200000 bytes (Send / Recv). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void site_bcast(char *buf)
{
    for (int i = 0; i < 20; i++)
        MPI_Bcast(buf, 1024, MPI_CHAR, 0, MPI_COMM_WORLD);
}

__attribute__((noinline)) static void site_allreduce(void)
{
    double x = 1.0, y;
    for (int i = 0; i < 30; i++)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

__attribute__((noinline)) static void site_p2p(int rank, char *big)
{
    for (int i = 0; i < 5; i++) {
        if (rank == 0)
            MPI_Send(big, 200000, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(big, 200000, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(1024, 1), *big = calloc(200000, 1);
    site_bcast(buf);
    site_allreduce();
    site_p2p(rank, big);
    free(buf);
    free(big);
    MPI_Finalize();
    if (rank == 0)
        printf("ok\n");
    return 0;
}

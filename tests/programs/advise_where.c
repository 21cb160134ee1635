/* Known calls at known sites for the where-the-time-goes table (tests/test_advise_where.py):
 * 10 Bcast of 100 bytes and 10 of 120 bytes from bcast_small, 5 Bcast of 4000 bytes from
 * bcast_large, 7 Reduce of 8 bytes to root 1 from reduce_small, and rank 0 sends rank 1 three
 * messages of 64 bytes. */
#include <mpi.h>
#include <stdlib.h>

__attribute__((noinline)) static void bcast_small(char *buf)
{
    for (int i = 0; i < 10; i++) {
        MPI_Bcast(buf, 100, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Bcast(buf, 120, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
}

__attribute__((noinline)) static void bcast_large(char *buf)
{
    for (int i = 0; i < 5; i++)
        MPI_Bcast(buf, 1000, MPI_INT, 0, MPI_COMM_WORLD);
}

__attribute__((noinline)) static void reduce_small(void)
{
    double x = 1.0, y = 0.0;
    for (int i = 0; i < 7; i++)
        MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(4000, 1);
    bcast_small(buf);
    bcast_large(buf);
    reduce_small();
    for (int i = 0; i < 3; i++) {
        if (rank == 0)
            MPI_Send(buf, 64, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(buf, 64, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

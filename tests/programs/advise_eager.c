/* Plants the eager-threshold finding: rank 0 sends rank 1 200 messages of 16 KiB, above Open
 * MPI's shared-memory eager limit (4 KiB) and below its fragment size (32 KiB), from one call site (Isend + Wait / Recv). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(16384, 1);
    for (int i = 0; i < 200; i++) {
        if (rank == 0) {
            MPI_Request req;
            MPI_Isend(buf, 16384, MPI_CHAR, 1, 0, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 16384, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

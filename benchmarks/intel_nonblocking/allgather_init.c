/* Intel MPI 2021.18.1: a started MPI_Allgather_init request crashes after a few starts, with no
 * colltune.
 *
 *   mpicc -o allgather_init benchmarks/intel_nonblocking/allgather_init.c
 *   mpiexec -n 2 ./allgather_init BYTES STARTS        (Intel MPI)
 *
 * Every rank starts one request STARTS times (BYTES per rank, checked after each start); rank 0
 * prints a line per completed start. Measured 2026-11-29 (20 starts): 2 ranks, 1 KiB: all 20;
 * 4 KiB: SIGSEGV in the 15th start, 8 KiB the 8th, 16 KiB the 4th, 32 KiB the 2nd; 4 ranks:
 * 1 KiB the 20th, 4 KiB the 6th, 8 KiB the 3rd; 3 ranks, 32 KiB: 50 starts right. Every
 * completed start gave the right bytes. colltune's bench leaves `default#persistent` of allgather
 * out (mpi/algorithms.py VARIANT_NPROCS_LIMITS); benchmarks/intel_nonblocking/README.md. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int n = argc > 1 ? atoi(argv[1]) : 32768, starts = argc > 2 ? atoi(argv[2]) : 20;
    char *send = malloc((size_t)n), *recv = malloc((size_t)n * p);
    for (int i = 0; i < n; i++) send[i] = (char)(rank + i);
    MPI_Request req;
    MPI_Allgather_init(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    long wrong = 0;
    for (int k = 0; k < starts; k++) {
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++) wrong += recv[(size_t)q * n + i] != (char)(q + i);
        if (rank == 0) {
            printf("start %d of %d bytes done, %ld wrong bytes so far\n", k + 1, n, wrong);
            fflush(stdout);
        }
    }
    printf("rank %d: %d starts, %ld wrong bytes\n", rank, starts, wrong);
    MPI_Request_free(&req);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}

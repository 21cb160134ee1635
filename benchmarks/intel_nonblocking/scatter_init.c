/* Intel MPI 2021.18.1: an MPI_Scatter_init request started a second time fails, with no colltune.
 *
 *   mpicc -o scatter_init benchmarks/intel_nonblocking/scatter_init.c
 *   mpiexec -n 3 ./scatter_init        (Intel MPI; 2 ranks pass, 3 and 4 fail)
 *
 * Each rank starts the request twice and prints both MPI_Wait codes. Measured 2026-11-29: at 3
 * and 4 ranks the root's second MPI_Wait returns "Other MPI error ... MPIDU_Sched_progress_state
 * (1372): Invalid communicator" and the last rank never returns from it (the launch hangs); the
 * first start is right everywhere. colltune's bench leaves `default#persistent` of scatter out
 * there (mpi/algorithms.py VARIANT_NPROCS_LIMITS); benchmarks/intel_nonblocking/README.md. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int start_and_wait(MPI_Request *req, char *why, int cap)
{
    int len = 0, rc = MPI_Start(req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, why, &len);
    why[len < cap ? len : cap - 1] = '\0';
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = 8;
    char *send = malloc((size_t)n * p), recv[8];
    for (int i = 0; i < n * p; i++) send[i] = (char)i;
    MPI_Request req;
    char why[MPI_MAX_ERROR_STRING] = "";
    int rc = MPI_Scatter_init(send, n, MPI_BYTE, recv, n, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    int first = rc == MPI_SUCCESS ? start_and_wait(&req, why, sizeof why) : rc;
    printf("rank %d of %d: first start %d (recv[0] %d)\n", rank, p, first, recv[0]);
    fflush(stdout);
    int second = first == MPI_SUCCESS ? start_and_wait(&req, why, sizeof why) : first;
    printf("rank %d of %d: second start %d %s\n", rank, p, second, why);
    fflush(stdout);
    if (second == MPI_SUCCESS) MPI_Request_free(&req);
    free(send);
    MPI_Finalize();
    return 0;
}

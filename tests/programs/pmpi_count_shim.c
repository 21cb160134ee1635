/* Preloaded after libcolltune: counts the PMPI_Allreduce calls on MPI_UINT64_T (the type of
 * libcolltune's settings agreement at MPI_Init; applications' own calls are not counted unless
 * they use it) and prints the count at PMPI_Finalize. Tests use it to check how many collectives
 * libcolltune adds at MPI_Init. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*finalize_fn)(void);
static int uint64_calls;

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm)
{
    allreduce_fn next = (allreduce_fn)dlsym(RTLD_NEXT, "PMPI_Allreduce");
    if (type == MPI_UINT64_T)
        uint64_calls++;
    return next(sendbuf, recvbuf, count, type, op, comm);
}

int PMPI_Finalize(void)
{
    finalize_fn next = (finalize_fn)dlsym(RTLD_NEXT, "PMPI_Finalize");
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("pmpi_count rank %d uint64_allreduce %d\n", rank, uint64_calls);
    fflush(stdout);
    return next();
}

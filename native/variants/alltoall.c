/*
 * MPI_Alltoall mock-up (PGMPITuneLib, GL8).
 */
#include "../core/ct_arena.h"
#include "ct_variants.h"

/* GL8: MPI_Alltoallv with equal counts (one set of arrays when both sides count alike). */
int colltune_alltoall_as_alltoallv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm)
{
    /* Nothing moves. MPICH's MPI_Alltoallv rejects the NULL buffers legal here as aliased. */
    if (recvcount == 0) return MPI_SUCCESS;
    int p, err;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    int in_place = sendbuf == MPI_IN_PLACE;
    if ((int64_t)(p - 1) * recvcount > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    if (!in_place && (int64_t)(p - 1) * sendcount > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    int shared = in_place || sendcount == recvcount;
    int *rcounts;
    err = ct_scratch(comm, (shared ? 2 : 4) * (size_t)p * sizeof(int), (void **)&rcounts);
    if (err != MPI_SUCCESS) return err;
    int *rdispls = rcounts + p;
    ct_fill_equal_blocks(p, recvcount, rcounts, rdispls);
    int *scounts = rcounts, *sdispls = rdispls;
    if (!shared) {
        scounts = rdispls + p;
        sdispls = scounts + p;
        ct_fill_equal_blocks(p, sendcount, scounts, sdispls);
    }
    if (in_place) sendtype = recvtype; /* ignored by MPI; keeps argument checks quiet */
    return PMPI_Alltoallv(sendbuf, scounts, sdispls, sendtype, recvbuf, rcounts, rdispls, recvtype,
                          comm);
}

/*
 * MPI_Alltoall mock-up (PGMPITuneLib, GL8).
 */
#include "ct_tables.h"
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
    const int *rcounts, *rdispls, *scounts, *sdispls;
    if ((err = ct_table_equal(comm, p, recvcount, &rcounts, &rdispls)) != MPI_SUCCESS) return err;
    int in_place = sendbuf == MPI_IN_PLACE;
    scounts = rcounts;
    sdispls = rdispls;
    if (!in_place && sendcount != recvcount &&
        (err = ct_table_equal(comm, p, sendcount, &scounts, &sdispls)) != MPI_SUCCESS)
        return err;
    if (in_place) sendtype = recvtype; /* ignored by MPI; keeps argument checks quiet */
    return PMPI_Alltoallv(sendbuf, scounts, sdispls, sendtype, recvbuf, rcounts, rdispls, recvtype,
                          comm);
}

/*
 * MPI_Allgather mock-ups (seed 000, GL1-GL4).
 */
#include "../core/ct_core.h"
#include "ct_variants.h"

#include <string.h>

/* GL1: gather to rank 0, then broadcast the p blocks. With MPI_IN_PLACE each rank's block
 * already sits at its place in recvbuf: rank 0 gathers in place, the others send from there. */
int colltune_allgather_as_gather_bcast(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm)
{
    int p, rank, total;
    MPI_Aint lb, extent;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = PMPI_Type_get_extent(recvtype, &lb, &extent);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, (int64_t)p * recvcount, &total);
    if (err != MPI_SUCCESS) return err;
    if (sendbuf == MPI_IN_PLACE && rank != 0) {
        sendbuf = ct_offset(recvbuf, (int64_t)rank * recvcount * extent);
        sendcount = recvcount;
        sendtype = recvtype;
    }
    err = PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm);
    if (err != MPI_SUCCESS) return err;
    return PMPI_Bcast(recvbuf, total, recvtype, 0, comm);
}

/* GL2: a send buffer with p copies of the own block, then MPI_Alltoall. */
int colltune_allgather_as_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    if (sendbuf == MPI_IN_PLACE) {
        sendcount = recvcount;
        sendtype = recvtype;
    }
    int64_t elem;
    if ((err = ct_type_size(sendtype, &elem)) != MPI_SUCCESS) return err;
    int64_t block = elem * sendcount;
    const void *own = sendbuf == MPI_IN_PLACE ? ct_offset(recvbuf, rank * block) : sendbuf;
    void *copies;
    if ((err = ct_scratch(comm, (size_t)(p * block), &copies)) != MPI_SUCCESS) return err;
    for (int i = 0; i < p; i++) memcpy(ct_offset(copies, i * block), own, (size_t)block);
    return PMPI_Alltoall(copies, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

/* GL3: every rank zeroes recvbuf around its own block; a bitwise-or MPI_Allreduce over the
 * bytes then leaves every block in place on every rank. Reduces in recvbuf: no scratch. */
int colltune_allgather_as_allreduce(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm)
{
    (void)sendcount;
    (void)sendtype;
    int p, rank, total;
    int64_t elem;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = ct_type_size(recvtype, &elem);
    int64_t block = elem * recvcount;
    if (err == MPI_SUCCESS) err = ct_to_int(comm, p * block, &total);
    if (err != MPI_SUCCESS) return err;
    void *own = ct_offset(recvbuf, rank * block);
    if (sendbuf != MPI_IN_PLACE) memcpy(own, sendbuf, (size_t)block);
    memset(recvbuf, 0, (size_t)(rank * block));
    memset(ct_offset(own, block), 0, (size_t)((p - rank - 1) * block));
    return PMPI_Allreduce(MPI_IN_PLACE, recvbuf, total, MPI_BYTE, MPI_BOR, comm);
}

/* GL4: MPI_Allgatherv with equal counts. */
int colltune_allgather_as_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm)
{
    int p, err;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    if ((int64_t)(p - 1) * recvcount > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    int *counts;
    err = ct_scratch(comm, 2 * (size_t)p * sizeof(int), (void **)&counts);
    if (err != MPI_SUCCESS) return err;
    int *displs = counts + p;
    for (int i = 0; i < p; i++) {
        counts[i] = recvcount;
        displs[i] = i * recvcount;
    }
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, comm);
}

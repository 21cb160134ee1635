/*
 * MPI_Allgather mock-ups (PGMPITuneLib, GL1-GL4).
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
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

/* GL2: a send buffer with p copies of the own block, then MPI_Alltoall. Data moves as MPI_BYTE
 * (n bytes per block, the same on every rank whatever datatypes the ranks passed); a receive
 * datatype with gaps receives into scratch and is unpacked. */
int colltune_allgather_as_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm)
{
    int p, rank, block;
    ct_blocks b;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = ct_byte_blocks(comm, p, 1, recvcount, recvtype, &b);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, b.block, &block);
    if (err != MPI_SUCCESS) return err;
    int64_t all = (int64_t)p * block;
    void *copies;
    if ((err = ct_scratch(comm, (size_t)(b.contiguous ? all : 2 * all), &copies)) != MPI_SUCCESS)
        return err;
    err = ct_own_block(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, rank, copies,
                       block, comm);
    if (err != MPI_SUCCESS) return err;
    for (int i = 1; i < p; i++) memcpy(ct_offset(copies, (int64_t)i * block), copies, (size_t)block);
    void *target = b.contiguous ? recvbuf : ct_offset(copies, all);
    err = PMPI_Alltoall(copies, block, MPI_BYTE, target, block, MPI_BYTE, comm);
    if (err != MPI_SUCCESS || b.contiguous) return err;
    return ct_unpack(target, all, recvbuf, b.count, recvtype, comm);
}

/* GL3: every rank zeroes a p-block buffer around its own block; a bitwise-or MPI_Allreduce over
 * the bytes then leaves every block in place on every rank. A contiguous receive datatype
 * reduces in recvbuf itself; one with gaps in scratch, then unpacks. */
int colltune_allgather_as_allreduce(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm)
{
    int p, rank, total;
    ct_blocks b;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = ct_byte_blocks(comm, p, 1, recvcount, recvtype, &b);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, p * b.block, &total);
    if (err != MPI_SUCCESS) return err;
    void *all;
    err = ct_or_vector(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, p, rank, &b,
                       total, &all, comm);
    if (err != MPI_SUCCESS) return err;
    err = PMPI_Allreduce(MPI_IN_PLACE, all, total, MPI_BYTE, MPI_BOR, comm);
    if (err != MPI_SUCCESS || b.contiguous) return err;
    return ct_unpack(all, total, recvbuf, b.count, recvtype, comm);
}

/* GL4: MPI_Allgatherv with equal counts. */
int colltune_allgather_as_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm)
{
    int p, err;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    const int *counts, *displs;
    if ((err = ct_table_equal(comm, p, recvcount, &counts, &displs)) != MPI_SUCCESS) return err;
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, comm);
}

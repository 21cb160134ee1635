/*
 * MPI_Gather mock-ups (PGMPITuneLib, GL11-GL13).
 *
 * The root's recvcount/recvtype are significant at the root only; non-roots describe their
 * block with sendcount/sendtype (same type signature by the standard).
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
#include "ct_variants.h"

/* GL11: MPI_Allgather in place on every rank (MPI_IN_PLACE of Allgather must be all or none,
 * and the root's choice is unknown elsewhere), as MPI_BYTE (n bytes per rank: the layouts may
 * differ between ranks): the root into recvbuf (into scratch and unpacked if its datatype has
 * gaps), the others into p*n bytes of scratch that they then drop. */
int colltune_gather_as_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm)
{
    int p, rank, block;
    ct_blocks b;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int is_root = rank == root;
    err = is_root ? ct_byte_blocks(comm, p, 1, recvcount, recvtype, &b)
                  : ct_byte_blocks(comm, p, 0, sendcount, sendtype, &b);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, b.block, &block);
    if (err != MPI_SUCCESS) return err;
    int64_t all = (int64_t)p * block;
    void *stage = recvbuf;
    if (!b.contiguous && (err = ct_scratch(comm, (size_t)all, &stage)) != MPI_SUCCESS) return err;
    /* The root in place with a contiguous recvbuf has its block at its place already. */
    if (sendbuf != MPI_IN_PLACE || !b.contiguous) {
        err = ct_own_block(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, rank,
                           ct_offset(stage, (int64_t)rank * block), block, comm);
        if (err != MPI_SUCCESS) return err;
    }
    err = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, stage, block, MPI_BYTE, comm);
    if (err != MPI_SUCCESS || !is_root || b.contiguous) return err;
    return ct_unpack(stage, all, recvbuf, b.count, recvtype, comm);
}

/* GL12: MPI_Gatherv with equal counts (arrays on the root only). */
int colltune_gather_as_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    const int *counts = NULL, *displs = NULL;
    if (rank == root && (err = ct_table_equal(comm, p, recvcount, &counts, &displs)) != MPI_SUCCESS)
        return err;
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root,
                        comm);
}

/* GL13: every rank places its block into p zeroed blocks; MPI_Reduce with MPI_BOR over the
 * bytes assembles them at the root, which reduces in its receive buffer (in scratch and unpacks
 * if its datatype has gaps). */
int colltune_gather_as_reduce(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm)
{
    int p, rank, total;
    ct_blocks b;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int is_root = rank == root;
    err = is_root ? ct_byte_blocks(comm, p, 1, recvcount, recvtype, &b)
                  : ct_byte_blocks(comm, p, 0, sendcount, sendtype, &b);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, p * b.block, &total);
    if (err != MPI_SUCCESS) return err;
    void *all;
    err = ct_or_vector(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, p, rank, &b,
                       total, &all, comm);
    if (err != MPI_SUCCESS) return err;
    if (!is_root) return PMPI_Reduce(all, NULL, total, MPI_BYTE, MPI_BOR, root, comm);
    err = PMPI_Reduce(MPI_IN_PLACE, all, total, MPI_BYTE, MPI_BOR, root, comm);
    if (err != MPI_SUCCESS || b.contiguous) return err;
    return ct_unpack(all, total, recvbuf, b.count, recvtype, comm);
}

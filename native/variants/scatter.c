/*
 * MPI_Scatter mock-ups (PGMPITuneLib, GL21-GL22). The root's sendbuf/sendcount/sendtype are
 * significant at the root only; non-roots describe one block with recvcount/recvtype.
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
#include "ct_variants.h"

/* GL21: broadcast the whole send buffer (p blocks) as MPI_BYTE, keep the own block. The root
 * packs its send buffer into scratch if its datatype has gaps; the others receive into scratch
 * and unpack their block. */
int colltune_scatter_as_bcast(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm)
{
    int p, rank, total;
    ct_blocks b;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int is_root = rank == root;
    err = is_root ? ct_byte_blocks(comm, p, 1, sendcount, sendtype, &b)
                  : ct_byte_blocks(comm, p, 0, recvcount, recvtype, &b);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, p * b.block, &total);
    if (err != MPI_SUCCESS) return err;
    void *all = (void *)sendbuf; /* MPI_Bcast only reads the root's buffer */
    if (!b.contiguous) { /* every non-root, and a root whose datatype has gaps */
        if ((err = ct_scratch(comm, (size_t)total, &all)) != MPI_SUCCESS) return err;
        if (is_root && (err = ct_pack(sendbuf, b.count, sendtype, all, total, comm)) != MPI_SUCCESS)
            return err;
    }
    err = PMPI_Bcast(all, total, MPI_BYTE, root, comm);
    if (err != MPI_SUCCESS || recvbuf == MPI_IN_PLACE) return err;
    return ct_unpack(ct_offset(all, rank * b.block), b.block, recvbuf, recvcount, recvtype, comm);
}

/* GL22: MPI_Scatterv with equal counts (arrays on the root only). */
int colltune_scatter_as_scatterv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    const int *counts = NULL, *displs = NULL;
    if (rank == root && (err = ct_table_equal(comm, p, sendcount, &counts, &displs)) != MPI_SUCCESS)
        return err;
    return PMPI_Scatterv(sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
}

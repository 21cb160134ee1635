/*
 * MPI_Bcast mock-ups (PGMPITuneLib, GL9-GL10).
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
#include "ct_variants.h"

#include <string.h>

/* GL9: MPI_Allgatherv in place where only the root contributes (count elements at
 * displacement 0); every other rank contributes nothing. */
int colltune_bcast_as_allgatherv(void *buffer, int count, MPI_Datatype datatype, int root,
                                 MPI_Comm comm)
{
    int p, err;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    const int *counts, *displs;
    err = ct_table_root_only(comm, p, root, count, &counts, &displs);
    if (err != MPI_SUCCESS) return err;
    return PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, counts, displs, datatype,
                           comm);
}

/* GL10: van de Geijn: scatter p equal blocks, allgather them, both in place. Blocks are cut in
 * bytes (MPI_BYTE on every rank): the message bytes n are the same everywhere, while count and
 * datatype may differ between ranks (only type signatures must match). When p does not divide n
 * or the datatype has gaps, the vector is staged (padded, packed) in scratch; otherwise the
 * buffer itself is used. */
int colltune_bcast_as_scatter_allgather(void *buffer, int count, MPI_Datatype datatype, int root,
                                        MPI_Comm comm)
{
    int p, rank, block;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err != MPI_SUCCESS) return err;
    int64_t bytes = elem * count, padded = (bytes + p - 1) / p * p;
    if ((err = ct_to_int(comm, padded, &block)) != MPI_SUCCESS) return err;
    block /= p;
    int contiguous;
    if ((err = ct_type_contiguous(datatype, &contiguous)) != MPI_SUCCESS) return err;
    void *vector = buffer;
    if (padded != bytes || !contiguous) {
        if ((err = ct_scratch(comm, (size_t)padded, &vector)) != MPI_SUCCESS) return err;
        if (rank == root) {
            if ((err = ct_pack(buffer, count, datatype, vector, bytes, comm)) != MPI_SUCCESS)
                return err;
            memset(ct_offset(vector, bytes), 0, (size_t)(padded - bytes));
        }
    }
    if (rank == root)
        err = PMPI_Scatter(vector, block, MPI_BYTE, MPI_IN_PLACE, block, MPI_BYTE, root, comm);
    else
        err = PMPI_Scatter(NULL, block, MPI_BYTE, ct_offset(vector, (int64_t)rank * block), block,
                           MPI_BYTE, root, comm);
    if (err != MPI_SUCCESS) return err;
    err = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, vector, block, MPI_BYTE, comm);
    if (err != MPI_SUCCESS) return err;
    if (vector != buffer && rank != root)
        return ct_unpack(vector, bytes, buffer, count, datatype, comm);
    return MPI_SUCCESS;
}

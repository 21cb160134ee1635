/*
 * MPI_Bcast mock-ups (seed 000, GL9-GL10).
 */
#include "../core/ct_core.h"
#include "ct_variants.h"

#include <string.h>

/* GL9: MPI_Allgatherv in place where only the root contributes (count elements at
 * displacement 0); every other rank contributes nothing. */
int colltune_bcast_as_allgatherv(void *buffer, int count, MPI_Datatype datatype, int root,
                                 MPI_Comm comm)
{
    int p, err;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    int *counts;
    err = ct_scratch(comm, 2 * (size_t)p * sizeof(int), (void **)&counts);
    if (err != MPI_SUCCESS) return err;
    int *displs = counts + p;
    for (int i = 0; i < p; i++) {
        counts[i] = i == root ? count : 0;
        displs[i] = 0;
    }
    return PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, counts, displs, datatype,
                           comm);
}

/* GL10: van de Geijn: scatter p equal blocks, allgather them, both in place. When p does not
 * divide the count, the vector is padded in scratch; otherwise the buffer itself is used. */
int colltune_bcast_as_scatter_allgather(void *buffer, int count, MPI_Datatype datatype, int root,
                                        MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = ct_type_size(datatype, &elem);
    if (err != MPI_SUCCESS) return err;
    int64_t block = ((int64_t)count + p - 1) / p;
    int64_t bytes = elem * count, block_bytes = elem * block;
    if (block * p > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    void *vector = buffer;
    if (block * p != count) {
        err = ct_scratch(comm, (size_t)(block_bytes * p), &vector);
        if (err != MPI_SUCCESS) return err;
        if (rank == root) {
            memcpy(vector, buffer, (size_t)bytes);
            memset(ct_offset(vector, bytes), 0, (size_t)(block_bytes * p - bytes));
        }
    }
    if (rank == root)
        err = PMPI_Scatter(vector, (int)block, datatype, MPI_IN_PLACE, (int)block, datatype, root,
                           comm);
    else
        err = PMPI_Scatter(NULL, (int)block, datatype, ct_offset(vector, rank * block_bytes),
                           (int)block, datatype, root, comm);
    if (err != MPI_SUCCESS) return err;
    err = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, vector, (int)block, datatype, comm);
    if (err != MPI_SUCCESS) return err;
    if (vector != buffer && rank != root) memcpy(buffer, vector, (size_t)bytes);
    return MPI_SUCCESS;
}

/*
 * MPI_Reduce_scatter_block mock-ups (seed 000, GL17-GL19). The input is p blocks of recvcount
 * elements; with MPI_IN_PLACE it is in recvbuf and the result goes to recvbuf's first block.
 */
#include "../core/ct_core.h"
#include "ct_variants.h"

#include <string.h>

/* GL17: MPI_Reduce of the whole vector to rank 0, MPI_Scatter of its blocks. */
int colltune_reducescatterblock_as_reduce_scatter(const void *sendbuf, void *recvbuf,
                                                  int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                  MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = ct_type_size(datatype, &elem);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, (int64_t)p * recvcount, &total);
    if (err != MPI_SUCCESS) return err;
    int in_place = sendbuf == MPI_IN_PLACE;
    if (rank != 0) {
        err = PMPI_Reduce(in_place ? recvbuf : sendbuf, NULL, total, datatype, op, 0, comm);
        if (err != MPI_SUCCESS) return err;
        return PMPI_Scatter(NULL, recvcount, datatype, recvbuf, recvcount, datatype, 0, comm);
    }
    if (in_place) {
        /* The result's first block is rank 0's: it is already where it belongs. */
        err = PMPI_Reduce(MPI_IN_PLACE, recvbuf, total, datatype, op, 0, comm);
        if (err != MPI_SUCCESS) return err;
        return PMPI_Scatter(recvbuf, recvcount, datatype, MPI_IN_PLACE, recvcount, datatype, 0,
                            comm);
    }
    void *vector;
    if ((err = ct_scratch(comm, (size_t)(elem * total), &vector)) != MPI_SUCCESS) return err;
    err = PMPI_Reduce(sendbuf, vector, total, datatype, op, 0, comm);
    if (err != MPI_SUCCESS) return err;
    return PMPI_Scatter(vector, recvcount, datatype, recvbuf, recvcount, datatype, 0, comm);
}

/* GL18: MPI_Reduce_scatter with equal counts. */
int colltune_reducescatterblock_as_reducescatter(const void *sendbuf, void *recvbuf,
                                                 int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                 MPI_Comm comm)
{
    int p, err;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    int *counts;
    if ((err = ct_scratch(comm, (size_t)p * sizeof(int), (void **)&counts)) != MPI_SUCCESS)
        return err;
    for (int i = 0; i < p; i++) counts[i] = recvcount;
    return PMPI_Reduce_scatter(sendbuf, recvbuf, counts, datatype, op, comm);
}

/* GL19: MPI_Allreduce of the whole vector, keep the own block. */
int colltune_reducescatterblock_as_allreduce(const void *sendbuf, void *recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = ct_type_size(datatype, &elem);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, (int64_t)p * recvcount, &total);
    if (err != MPI_SUCCESS) return err;
    int64_t block_bytes = elem * recvcount;
    if (sendbuf == MPI_IN_PLACE) {
        err = PMPI_Allreduce(MPI_IN_PLACE, recvbuf, total, datatype, op, comm);
        if (err == MPI_SUCCESS)
            memmove(recvbuf, ct_offset(recvbuf, rank * block_bytes), (size_t)block_bytes);
        return err;
    }
    void *vector;
    if ((err = ct_scratch(comm, (size_t)(elem * total), &vector)) != MPI_SUCCESS) return err;
    err = PMPI_Allreduce(sendbuf, vector, total, datatype, op, comm);
    if (err == MPI_SUCCESS)
        memcpy(recvbuf, ct_offset(vector, rank * block_bytes), (size_t)block_bytes);
    return err;
}

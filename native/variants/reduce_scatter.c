/*
 * MPI_Reduce_scatter mock-ups (PGMPI: RS1 <= MPI_Allreduce, RS2 <= MPI_Reduce +
 * MPI_Scatterv). With MPI_IN_PLACE the input is in recvbuf and the own block goes to its start;
 * the rest of recvbuf stays as it was, so both reduce into scratch.
 */
#include "../core/ct_arena.h"
#include "ct_variants.h"

#include <string.h>

/* Sum of the counts of ranks below `upto`, and of all ranks: the whole vector's count, an int
 * (else MPI_ERR_COUNT, raised). */
static int ct_prefix(MPI_Comm comm, const int *counts, int p, int upto, int64_t *below, int *total)
{
    int64_t sum = 0;
    *below = 0;
    for (int i = 0; i < p; i++) {
        if (i < upto) *below += counts[i];
        sum += counts[i];
    }
    return ct_to_int(comm, sum, total);
}

/* RS1: MPI_Allreduce of the whole vector into scratch, keep the own block. */
int colltune_reducescatter_as_allreduce(const void *sendbuf, void *recvbuf,
                                        const int *recvcounts, MPI_Datatype datatype, MPI_Op op,
                                        MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem, below;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err == MPI_SUCCESS) err = ct_prefix(comm, recvcounts, p, rank, &below, &total);
    if (err != MPI_SUCCESS) return err;
    void *vector;
    if ((err = ct_scratch(comm, (size_t)(elem * total), &vector)) != MPI_SUCCESS) return err;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    err = PMPI_Allreduce(input, vector, total, datatype, op, comm);
    if (err == MPI_SUCCESS)
        memcpy(recvbuf, ct_offset(vector, elem * below), (size_t)(elem * recvcounts[rank]));
    return err;
}

/* RS2: MPI_Reduce of the whole vector to rank 0 (into scratch), MPI_Scatterv of the blocks. */
int colltune_reducescatter_as_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                              const int *recvcounts, MPI_Datatype datatype,
                                              MPI_Op op, MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem, below;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err == MPI_SUCCESS) err = ct_prefix(comm, recvcounts, p, rank, &below, &total);
    if (err != MPI_SUCCESS) return err;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (rank != 0) {
        err = PMPI_Reduce(input, NULL, total, datatype, op, 0, comm);
        if (err != MPI_SUCCESS) return err;
        return PMPI_Scatterv(NULL, NULL, NULL, datatype, recvbuf, recvcounts[rank], datatype, 0,
                             comm);
    }
    size_t arrays = ct_align_up((size_t)p * sizeof(int));
    void *scratch;
    err = ct_scratch(comm, arrays + (size_t)(elem * total), &scratch);
    if (err != MPI_SUCCESS) return err;
    int *displs = scratch;
    for (int i = 0, at = 0; i < p; at += recvcounts[i], i++) displs[i] = at;
    void *vector = ct_offset(scratch, (int64_t)arrays);
    err = PMPI_Reduce(input, vector, total, datatype, op, 0, comm);
    if (err != MPI_SUCCESS) return err;
    return PMPI_Scatterv(vector, recvcounts, displs, datatype, recvbuf, recvcounts[0], datatype, 0,
                         comm);
}

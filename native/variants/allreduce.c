/*
 * MPI_Allreduce mock-ups (PGMPITuneLib, GL5-GL7). All keep the rank order of the reduction (the
 * library's reductions do), so non-commutative ops give the library's result.
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
#include "ct_variants.h"

#include <string.h>

/* GL5: reduce to rank 0, broadcast the result. */
int colltune_allreduce_as_reduce_bcast(const void *sendbuf, void *recvbuf, int count,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    if (rank == 0) {
        err = PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, 0, comm);
    } else if (sendbuf == MPI_IN_PLACE) {
        /* MPI_Reduce allows MPI_IN_PLACE on the root only: send the input from recvbuf. */
        err = PMPI_Reduce(recvbuf, NULL, count, datatype, op, 0, comm);
    } else {
        err = PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, 0, comm);
    }
    if (err != MPI_SUCCESS) return err;
    return PMPI_Bcast(recvbuf, count, datatype, 0, comm);
}

/* GL6: pad the vector to p equal blocks, MPI_Reduce_scatter_block in place, MPI_Allgather in
 * place. Without padding it works in recvbuf directly; otherwise in one padded scratch vector. */
int colltune_allreduce_as_reducescatterblock_allgather(const void *sendbuf, void *recvbuf,
                                                       int count, MPI_Datatype datatype,
                                                       MPI_Op op, MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    int64_t block = 0;
    if (err == MPI_SUCCESS) err = ct_padded_block(comm, count, p, &block);
    if (err != MPI_SUCCESS) return err;
    int64_t bytes = elem * count, block_bytes = elem * block;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    void *vector = recvbuf;
    if (block * p != count) {
        err = ct_padded_copy(comm, input, bytes, block_bytes * p, &vector);
        if (err != MPI_SUCCESS) return err;
        input = MPI_IN_PLACE;
    } else if (sendbuf == MPI_IN_PLACE) {
        input = MPI_IN_PLACE;
    }
    void *own = ct_offset(vector, rank * block_bytes);
    if (input == MPI_IN_PLACE) {
        err = PMPI_Reduce_scatter_block(MPI_IN_PLACE, vector, (int)block, datatype, op, comm);
        /* In place, the result block lands at the start of the vector. */
        if (err == MPI_SUCCESS) memmove(own, vector, (size_t)block_bytes);
    } else {
        err = PMPI_Reduce_scatter_block(input, own, (int)block, datatype, op, comm);
    }
    if (err != MPI_SUCCESS) return err;
    err = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, vector, (int)block, datatype, comm);
    if (err != MPI_SUCCESS) return err;
    if (vector != recvbuf) memcpy(recvbuf, vector, (size_t)bytes);
    return MPI_SUCCESS;
}

/* GL7: MPI_Reduce_scatter into recvbuf (rank i gets a run of chunks of C bytes), then
 * MPI_Allgatherv in place: no message buffer beyond counts and displacements. */
int colltune_allreduce_as_reducescatter_allgatherv(const void *sendbuf, void *recvbuf, int count,
                                                   MPI_Datatype datatype, MPI_Op op,
                                                   MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err != MPI_SUCCESS) return err;
    const int *counts, *displs;
    if ((err = ct_table_chunks(comm, p, count, elem, &counts, &displs)) != MPI_SUCCESS) return err;
    /* A rank that owns no element (count < chunks of p ranks) must not point one past the end
     * of recvbuf: that may be the caller's sendbuf, which MPICH rejects as aliased. */
    void *own = counts[rank] > 0 ? ct_offset(recvbuf, elem * displs[rank]) : recvbuf;
    if (sendbuf == MPI_IN_PLACE) {
        err = PMPI_Reduce_scatter(MPI_IN_PLACE, recvbuf, counts, datatype, op, comm);
        if (err == MPI_SUCCESS) memmove(own, recvbuf, (size_t)(elem * counts[rank]));
    } else {
        err = PMPI_Reduce_scatter(sendbuf, own, counts, datatype, op, comm);
    }
    if (err != MPI_SUCCESS) return err;
    return PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, counts, displs, datatype,
                           comm);
}

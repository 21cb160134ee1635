/*
 * MPI_Reduce mock-ups (PGMPITuneLib, GL14-GL16). MPI_IN_PLACE is significant at the root only, so
 * the inner collectives must not depend on it: every rank calls them the same way.
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
#include "ct_variants.h"

#include <string.h>

/* GL14: MPI_Allreduce in place on every rank; non-roots reduce in n bytes of scratch. */
int colltune_reduce_as_allreduce(const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err != MPI_SUCCESS) return err;
    int64_t bytes = elem * count;
    void *result = recvbuf;
    if (rank != root) {
        if ((err = ct_scratch(comm, (size_t)bytes, &result)) != MPI_SUCCESS) return err;
    }
    if (sendbuf != MPI_IN_PLACE) memcpy(result, sendbuf, (size_t)bytes);
    return PMPI_Allreduce(MPI_IN_PLACE, result, count, datatype, op, comm);
}

/* GL15: pad to p equal blocks in scratch, MPI_Reduce_scatter_block in place, MPI_Gather of the
 * blocks to the root (into recvbuf directly when there is no padding). */
int colltune_reduce_as_reducescatterblock_gather(const void *sendbuf, void *recvbuf, int count,
                                                 MPI_Datatype datatype, MPI_Op op, int root,
                                                 MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    int64_t block = 0;
    if (err == MPI_SUCCESS) err = ct_padded_block(comm, count, p, &block);
    if (err != MPI_SUCCESS) return err;
    int64_t bytes = elem * count, block_bytes = elem * block;
    const void *input = rank == root && sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    void *vector;
    if ((err = ct_padded_copy(comm, input, bytes, block_bytes * p, &vector)) != MPI_SUCCESS)
        return err;
    err = PMPI_Reduce_scatter_block(MPI_IN_PLACE, vector, (int)block, datatype, op, comm);
    if (err != MPI_SUCCESS) return err;
    if (rank != root)
        return PMPI_Gather(vector, (int)block, datatype, NULL, (int)block, datatype, root, comm);
    /* The root gathers in place: its own block first moves to its place. */
    void *target = block * p == count ? recvbuf : vector;
    memmove(ct_offset(target, root * block_bytes), vector, (size_t)block_bytes);
    err = PMPI_Gather(MPI_IN_PLACE, (int)block, datatype, target, (int)block, datatype, root, comm);
    if (err != MPI_SUCCESS) return err;
    if (target != recvbuf) memcpy(recvbuf, target, (size_t)bytes);
    return MPI_SUCCESS;
}

/* GL16: MPI_Reduce_scatter in runs of C-byte chunks into scratch, MPI_Gatherv to the root. */
int colltune_reduce_as_reducescatter_gatherv(const void *sendbuf, void *recvbuf, int count,
                                             MPI_Datatype datatype, MPI_Op op, int root,
                                             MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err != MPI_SUCCESS) return err;
    /* Every rank gets at most ceil(chunks / p) chunks: size the scratch for that. */
    int64_t chunk = (int64_t)colltune_chunk_bytes() / (elem > 0 ? elem : 1);
    if (chunk < 1) chunk = 1;
    int64_t most = (((int64_t)count + chunk - 1) / chunk + p - 1) / p * chunk;
    const int *counts, *displs;
    if ((err = ct_table_chunks(comm, p, count, elem, &counts, &displs)) != MPI_SUCCESS) return err;
    void *part;
    if ((err = ct_scratch(comm, (size_t)(most * elem), &part)) != MPI_SUCCESS) return err;
    const void *input = rank == root && sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    err = PMPI_Reduce_scatter(input, part, counts, datatype, op, comm);
    if (err != MPI_SUCCESS) return err;
    return PMPI_Gatherv(part, counts[rank], datatype, recvbuf, counts, displs, datatype, root,
                        comm);
}

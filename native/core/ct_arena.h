/*
 * The scratch arena of the mock-ups (ct_arena.c): one block per communicator, carved into at most
 * three aligned regions per call.
 */
#ifndef CT_ARENA_H
#define CT_ARENA_H

#include "ct_core.h"

/* Scratch regions are carved from one arena block at this alignment; the applicability check
 * adds CT_SCRATCH_SLACK to a formula so that the carving never exceeds what it compared to the
 * cap (a mock-up carves at most three regions). */
#define CT_SCRATCH_ALIGN ((size_t)64)
#define CT_SCRATCH_SLACK ((int64_t)(4 * 64))

static inline size_t ct_align_up(size_t bytes)
{
    return (bytes + CT_SCRATCH_ALIGN - 1) & ~(CT_SCRATCH_ALIGN - 1);
}

/* colltune_scratch for a mock-up: a failure is raised on the communicator (see ct_raise). */
static inline int ct_scratch(MPI_Comm comm, size_t bytes, void **buffer)
{
    int err = colltune_scratch(comm, bytes, buffer);
    return err == MPI_SUCCESS ? err : ct_raise(comm, err);
}

/* The padded vector of GL6 and GL15 in the communicator's scratch: `bytes` of `input`, then
 * zeros up to `padded` bytes (the padding is reduced like data, then dropped: zeros rather than
 * whatever the scratch held). */
static inline int ct_padded_copy(MPI_Comm comm, const void *input, int64_t bytes, int64_t padded,
                                 void **vector)
{
    int err = ct_scratch(comm, (size_t)padded, vector);
    if (err != MPI_SUCCESS) return err;
    memcpy(*vector, input, (size_t)bytes);
    memset(ct_offset(*vector, bytes), 0, (size_t)(padded - bytes));
    return MPI_SUCCESS;
}

/* The byte vector of p blocks that a bitwise-or reduction assembles (GL3, GL13): in recvbuf
 * when it holds all blocks contiguously (else `total` bytes of scratch), the own block at its
 * place, zeros in every other block, so that or-ing the ranks' vectors leaves each block in
 * place. With MPI_IN_PLACE and a contiguous recvbuf the own block is there already. */
static inline int ct_or_vector(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int p,
                               int rank, const ct_blocks *b, int total, void **all, MPI_Comm comm)
{
    int err;
    *all = recvbuf;
    if (!b->contiguous && (err = ct_scratch(comm, (size_t)total, all)) != MPI_SUCCESS) return err;
    if (sendbuf != MPI_IN_PLACE || !b->contiguous) {
        err = ct_own_block(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, rank,
                           ct_offset(*all, rank * b->block), b->block, comm);
        if (err != MPI_SUCCESS) return err;
    }
    memset(*all, 0, (size_t)(rank * b->block));
    memset(ct_offset(*all, (rank + 1) * b->block), 0, (size_t)((p - rank - 1) * b->block));
    return MPI_SUCCESS;
}

#endif /* CT_ARENA_H */

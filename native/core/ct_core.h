/*
 * Internal helpers of the C core shared by core/ and variants/ (not part of the public API);
 * ct_core.c implements the functions declared here.
 */
#ifndef CT_CORE_H
#define CT_CORE_H

#include "ct_tls.h"
#include "colltune.h"
#include "ct_catalog.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void *ct_offset(void *base, int64_t bytes)
{
    return (char *)base + bytes;
}

static inline const void *ct_coffset(const void *base, int64_t bytes)
{
    return (const char *)base + bytes;
}

/* An error colltune itself detects in a mock-up (no scratch, a count that does not fit): raised
 * on the communicator's error handler like the library's own errors, so that the default
 * MPI_ERRORS_ARE_FATAL stops the job with a message instead of leaving the other ranks waiting
 * in a collective this rank never entered. Returns `err`. */
static inline int ct_raise(MPI_Comm comm, int err)
{
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    /* SMPI 3.32 calls a null function for MPI_ERRORS_RETURN (Errhandler::call): returning the
     * error is all that handler would do. */
    MPI_Errhandler handler;
    if (PMPI_Comm_get_errhandler(comm, &handler) != MPI_SUCCESS || handler == MPI_ERRORS_RETURN)
        return err;
#endif
    PMPI_Comm_call_errhandler(comm, err);
    return err;
}

/* An element count computed by a mock-up, as the int an MPI call takes. The applicability
 * checks rule these overflows out; this keeps a mock-up memory-safe if called anyway. */
static inline int ct_to_int(MPI_Comm comm, int64_t count, int *out)
{
    if (count < 0 || count > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    *out = (int)count;
    return MPI_SUCCESS;
}

/* Size (bytes of data, no gaps) of one element of `type`. Every decision needs the call's bytes
 * and PMPI_Type_size costs ~30 instructions, so the sizes of predefined ("named") datatypes are
 * kept per thread: their handles are never freed, so a kept size cannot go stale (a derived
 * type's handle can be freed and reused for another type: derived types always ask the
 * library). Direct-mapped, 4 entries; tag 0 empty, 1 derived, size + 2 named. */
typedef struct ct_tsize {
    MPI_Datatype type;
    int64_t tag;
} ct_tsize;
extern __attribute__((visibility("hidden"))) _Thread_local ct_tsize ct_tsizes[4]
    CT_TLS_MODEL;
int ct_type_size_slow(MPI_Datatype type, int64_t *bytes);

static inline unsigned ct_tslot(MPI_Datatype type)
{
    uintptr_t x = (uintptr_t)type;
    return (unsigned)((x ^ x >> 5 ^ x >> 11) & 3u);
}

static inline int ct_type_size(MPI_Datatype type, int64_t *bytes)
{
    const ct_tsize *e = &ct_tsizes[ct_tslot(type)];
    if (__builtin_expect(e->type == type && e->tag > 1, 1)) {
        *bytes = e->tag - 2;
        return MPI_SUCCESS;
    }
    return ct_type_size_slow(type, bytes);
}

/* Does an array of `type` elements occupy exactly count*size bytes starting at the buffer
 * address (lb 0, true lb 0, extent == true extent == size)? Then raw memcpy is exact. */
int ct_type_contiguous(MPI_Datatype type, int *contiguous);

/* 1 if `op` is one of MPI's predefined reduction operations. */
int ct_op_predefined(MPI_Op op);
/* Has `op` on `type` an exact inverse: MPI_SUM on a predefined integer type (two's complement
 * arithmetic wraps) or MPI_BXOR on one or on MPI_BYTE (CT4 subtracts or xors the own input). */
int ct_op_invertible(MPI_Op op, MPI_Datatype type);

/* Typed buffer <-> raw bytes, for the mock-ups that move data as MPI_BYTE (every rank then
 * agrees on counts derived from the uniform n, whatever datatypes the ranks passed). A
 * contiguous datatype is copied with memcpy, others go through PMPI_Pack/PMPI_Unpack, whose
 * format on a homogeneous system is the data bytes in order (checked: a pack size other than
 * `bytes` is an error, MPI_ERR_TYPE, raised on `comm`). */
int ct_pack(const void *buf, int count, MPI_Datatype type, void *raw, int64_t bytes,
            MPI_Comm comm);
int ct_unpack(const void *raw, int64_t bytes, void *buf, int count, MPI_Datatype type,
              MPI_Comm comm);

/* p blocks of `count` elements of `type` that a mock-up moves as raw bytes (GL2, GL3, GL11,
 * GL13, GL21). A rank that holds the typed buffer of all p blocks (every rank of an Allgather,
 * the root of a Gather or Scatter) learns whether it is contiguous (then the mock-up works in
 * it) and its count p * `count` for ct_pack/ct_unpack (MPI_ERR_COUNT, raised, if that does not
 * fit an int); another rank passes its own block's count and type (the same type signature, by
 * the standard) and gets contiguous 0 (it works in scratch) and count 0. */
typedef struct ct_blocks {
    int64_t block;  /* bytes of one block */
    int contiguous; /* holder only */
    int count;      /* holder only */
} ct_blocks;
int ct_byte_blocks(MPI_Comm comm, int p, int holds, int count, MPI_Datatype type, ct_blocks *b);

/* The own block as raw bytes at `raw` (n bytes) for the mock-ups that gather p blocks as bytes
 * (GL2, GL3, GL11, GL13): from sendbuf, or with MPI_IN_PLACE (the caller's block already at its
 * place, rank * recvcount elements into recvbuf) from there. */
int ct_own_block(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int rank, void *raw, int64_t n,
                 MPI_Comm comm);

/* The counts and displacements of p equal blocks of `count` elements each: the vector form of a
 * regular call (GL4, GL8, GL12, GL22). The caller has checked that (p - 1) * count fits an int. */
static inline void ct_fill_equal_blocks(int p, int count, int *counts, int *displs)
{
    for (int i = 0; i < p; i++) {
        counts[i] = count;
        displs[i] = i * count;
    }
}

/* `count` elements padded to p equal blocks of ceil(count / p) (GL6, GL15); MPI_ERR_COUNT,
 * raised, when the padded vector's count does not fit an int. */
static inline int ct_padded_block(MPI_Comm comm, int count, int p, int64_t *block)
{
    *block = ((int64_t)count + p - 1) / p;
    return *block * p > INT_MAX ? ct_raise(comm, MPI_ERR_COUNT) : MPI_SUCCESS;
}

/* Communicator size and rank in one call. */
int ct_comm_size_rank(MPI_Comm comm, int *size, int *rank);

/* The communicator's attribute under `keyval`, or a new zeroed one of `size` bytes set there
 * (freed by the keyval's delete callback); MPI_ERR_NO_MEM or MPI's error otherwise. */
int ct_comm_attr(MPI_Comm comm, int keyval, size_t size, void **attribute);

/* ... and the size of one element of `type`: the first lines of every reduction mock-up. */
int ct_comm_shape(MPI_Comm comm, MPI_Datatype type, int *size, int *rank, int64_t *elem);

/* A byte count from a COLLTUNE_* variable: digits with an optional binary suffix K, M or G
 * (64K = 65536). Returns 0 and the value, or -1 if `text` is not such a count. */
int ct_parse_bytes(const char *text, size_t *bytes);

/* Split the chunked vector of GL7/GL16: `count` elements of `elem` bytes in chunks of
 * colltune_chunk_bytes() (whole elements, at least one); rank i gets a contiguous run of
 * chunks, the first (chunks % p) ranks one more. counts/displs: p ints each. Returns the
 * largest count. */
int ct_chunk_split(int count, int64_t elem, int p, int *counts, int *displs);

/* The arguments of a variant's scratch formula for `call` (uniform arguments only). */
int ct_scratch_args_of(const ct_call *call, ct_scratch_args *args);

#endif /* CT_CORE_H */

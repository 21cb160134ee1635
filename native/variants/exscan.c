/*
 * MPI_Exscan mock-up (colltune CT4).
 */
#include "../core/ct_arena.h"
#include "ct_variants.h"

#include <stdint.h>
#include <string.h>

/* out[i] = scan[i] - own[i] (MPI_SUM) or scan[i] ^ own[i] (MPI_BXOR) on elements of `width`
 * bytes, in unsigned arithmetic: it wraps exactly as two's complement sums do. */
static void ct_remove_own(void *out, const void *scan, const void *own, int64_t elems, int width,
                          int sum)
{
#define CT_REMOVE(T)                                                                          \
    for (int64_t i = 0; i < elems; i++) {                                                     \
        T a, b;                                                                               \
        memcpy(&a, (const char *)scan + i * width, sizeof a);                                 \
        memcpy(&b, (const char *)own + i * width, sizeof b);                                  \
        T r = sum ? (T)(a - b) : (T)(a ^ b);                                                  \
        memcpy((char *)out + i * width, &r, sizeof r);                                        \
    }
    switch (width) {
    case 1: CT_REMOVE(uint8_t) break;
    case 2: CT_REMOVE(uint16_t) break;
    case 4: CT_REMOVE(uint32_t) break;
    default: CT_REMOVE(uint64_t) break;
    }
#undef CT_REMOVE
}

/* CT4: the inclusive MPI_Scan into scratch, then the own input taken out again with the op's
 * inverse (the rule allows only ops that have an exact one: ct_op_invertible). Rank 0's result
 * is undefined by the standard: its receive buffer is left as it was. */
int colltune_exscan_as_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm)
{
    int p, rank;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err != MPI_SUCCESS) return err;
    const void *own = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    void *scan;
    if ((err = ct_scratch(comm, (size_t)(elem * count), &scan)) != MPI_SUCCESS) return err;
    err = PMPI_Scan(own, scan, count, datatype, op, comm);
    if (err != MPI_SUCCESS || rank == 0) return err;
    if (op == MPI_SUM)
        ct_remove_own(recvbuf, scan, own, count, (int)elem, 1);
    else   /* MPI_BXOR: bytewise, whatever the element width (MPI_BYTE too) */
        ct_remove_own(recvbuf, scan, own, (int64_t)count * elem, 1, 0);
    return MPI_SUCCESS;
}

/*
 * Case classes of the proof (docs/select.md, "The proof"). `colltune selftest` runs every
 * portfolio member (mock-ups and the library's own algorithms) through the exactness matrix and
 * records, per member, the classes in which it gave the library default's result bit for bit;
 * the runtime serves a member only in those classes (native/runtime/proof.c).
 *
 * A class is (buffer mode, op class, datatype class, size band). The class of a call must come
 * from arguments identical on all ranks, so that every rank takes the same decision:
 *  - MPI_IN_PLACE is uniform for allgather, allreduce, alltoall, reduce_scatter(_block) and scan;
 *    for gather, scatter and reduce only the root says it, so such a call needs both modes proven;
 *  - the op and the datatype of a reduction are uniform; the datatypes of data movement may
 *    differ between ranks (same signature, other layout), so data movement has one datatype
 *    class ("any"), proven with per-rank layouts in the matrix;
 *  - the size band comes from the call's message bytes as the table defines them (uniform):
 *    vector widths, segment sizes and the library's own algorithm switches all fall on byte
 *    thresholds, so a member can pass below one and be refused above it.
 * Classes whose result depends on the order in which partial results are combined (sums and
 * products of floats, and of 8- and 16-bit integers, which Open MPI 5.0's op/avx saturates) are
 * "sized": that order changes with the communicator size, so they are proven only for the
 * communicator sizes the proof ran on (ct_proof_sized).
 */
#ifndef CT_PROOF_H
#define CT_PROOF_H

#include <stddef.h>
#include <stdint.h>

#include "colltune.h"

enum ct_proof_dt { CT_PROOF_DT_ANY, CT_PROOF_DT_INT8, CT_PROOF_DT_INT16, CT_PROOF_DT_INT,
                   CT_PROOF_DT_FLOAT, CT_PROOF_DT_OTHER, CT_PROOF_DTS };
enum ct_proof_op { CT_PROOF_OP_NONE, CT_PROOF_OP_BUILTIN, CT_PROOF_OP_USER_COMM,
                   CT_PROOF_OP_USER_NONCOMM, CT_PROOF_OPS };
/* Size bands by message bytes: below the smallest vector width (16 B: every op runs its scalar
 * loop), up to the short-message switches (MPICH's 2048 B), up to 64 KiB, above. */
#define CT_PROOF_BANDS 4
#define CT_PROOF_CLASSES (2 * CT_PROOF_OPS * CT_PROOF_DTS * CT_PROOF_BANDS)
#define CT_PROOF_WORDS ((CT_PROOF_CLASSES + 63) / 64)
#define CT_PROOF_NAME 48
/* Communicator sizes a sized class can be proven for (one bit each). */
#define CT_PROOF_MAX_SIZE 63

typedef struct ct_proof_set {
    uint64_t w[CT_PROOF_WORDS];
} ct_proof_set;

static inline void ct_proof_set_add(ct_proof_set *s, int cls)
{
    s->w[cls / 64] |= (uint64_t)1 << (cls % 64);
}

static inline int ct_proof_set_has(const ct_proof_set *s, int cls)
{
    return (int)(s->w[cls / 64] >> (cls % 64) & 1);
}

/* Whether every class of `sub` is in `s`. */
static inline int ct_proof_set_covers(const ct_proof_set *s, const ct_proof_set *sub)
{
    for (int i = 0; i < CT_PROOF_WORDS; i++)
        if ((s->w[i] & sub->w[i]) != sub->w[i])
            return 0;
    return 1;
}

static inline int ct_proof_set_meets(const ct_proof_set *a, const ct_proof_set *b)
{
    for (int i = 0; i < CT_PROOF_WORDS; i++)
        if (a->w[i] & b->w[i])
            return 1;
    return 0;
}

/* The band of a message of `bytes` bytes. */
int ct_proof_band(int64_t bytes);
/* The exact class of a call whose buffer mode and bytes are known; -1 if an MPI query failed. */
int ct_proof_class(int coll, int in_place, MPI_Op op, MPI_Datatype datatype, int64_t bytes);
/* The classes a call may be in, from uniform arguments only (one, or two where MPI_IN_PLACE is
 * root-only); MPI_SUCCESS, or an error if it cannot be classified (the call then goes to the
 * library). */
int ct_proof_required(const ct_call *call, ct_proof_set *out);
/* Every class a call of collective `coll` can be in. */
void ct_proof_possible(int coll, ct_proof_set *out);
/* The sized classes (see above): proven per communicator size. */
int ct_proof_sized(int cls);
void ct_proof_sized_set(ct_proof_set *out);
/* "in_place/builtin/int8/16-2047B"; ct_proof_class_parse adds the classes a name stands for to
 * `out` (a name without a band stands for every band) and returns -1 for an unknown name. */
void ct_proof_class_name(int cls, char *out, size_t len);
const char *ct_proof_band_name(int band);
int ct_proof_class_parse(const char *name, ct_proof_set *out);

#endif /* CT_PROOF_H */

/*
 * Case classes of the proof (docs/select.md, "The proof"). `colltune selftest` runs every
 * portfolio member (mock-ups and the library's own algorithms) through the exactness matrix and
 * records, per member, the classes in which it gave the library default's result; the runtime
 * serves a member only in those classes (native/runtime/proof.c).
 *
 * A class is (buffer mode, op class, datatype class). The class of a call must come from
 * arguments identical on all ranks, so that every rank takes the same decision:
 *  - MPI_IN_PLACE is uniform for allgather, allreduce, alltoall, reduce_scatter(_block) and scan;
 *    for gather, scatter and reduce only the root says it, so such a call needs both modes proven;
 *  - the op and the datatype of a reduction are uniform; the datatypes of data movement may
 *    differ between ranks (same signature, other layout), so data movement has one datatype
 *    class ("any"), proven with per-rank layouts in the matrix.
 */
#ifndef CT_PROOF_H
#define CT_PROOF_H

#include <stddef.h>
#include <stdint.h>

#include "colltune.h"

enum ct_proof_dt { CT_PROOF_DT_ANY, CT_PROOF_DT_INT8, CT_PROOF_DT_INT, CT_PROOF_DT_FLOAT,
                   CT_PROOF_DT_OTHER, CT_PROOF_DTS };
enum ct_proof_op { CT_PROOF_OP_NONE, CT_PROOF_OP_BUILTIN, CT_PROOF_OP_USER_COMM,
                   CT_PROOF_OP_USER_NONCOMM, CT_PROOF_OPS };
#define CT_PROOF_CLASSES (2 * CT_PROOF_OPS * CT_PROOF_DTS)   /* fits a uint64_t mask */
#define CT_PROOF_NAME 48

/* The exact class of a call whose buffer mode is known; -1 if an MPI query failed. */
int ct_proof_class(int coll, int in_place, MPI_Op op, MPI_Datatype datatype);
/* The classes a call may be in, from uniform arguments only (one bit, or two where MPI_IN_PLACE
 * is root-only); 0 if it cannot be classified (the call then goes to the library). */
uint64_t ct_proof_required(const ct_call *call);
/* Every class a call of collective `coll` can be in. */
uint64_t ct_proof_possible(int coll);
/* "in_place/builtin/int8"; the parser returns -1 for an unknown name. */
void ct_proof_class_name(int cls, char *out, size_t len);
int ct_proof_class_parse(const char *name);

#endif /* CT_PROOF_H */

/*
 * Case classes of the proof: shared by the selftest (which records them) and the runtime (which
 * serves a member only in the classes it passed). See ct_proof.h for what is uniform.
 */
#include <stdio.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_proof.h"

static const char *const ct_dt_names[CT_PROOF_DTS] = {"any", "int8", "int", "float", "other"};
static const char *const ct_op_names[CT_PROOF_OPS] = {"none", "builtin", "user_commutative",
                                                      "user_noncommutative"};

static int ct_in_list(MPI_Datatype type, const MPI_Datatype *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] != MPI_DATATYPE_NULL && type == list[i])
            return 1;
    return 0;
}

/* 8-bit integers apart: Open MPI 5.0's op/avx saturates their sums, and its algorithms split the
 * vector differently, so members disagree there and nowhere else (MPI-NOTES). */
static int ct_dt_class(MPI_Datatype type, int *cls)
{
    int ni, na, nd, combiner;
    int err = PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (err != MPI_SUCCESS)
        return err;
    static const MPI_Datatype int8[] = {MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_INT8_T, MPI_UINT8_T,
                                        MPI_CHAR};
    static const MPI_Datatype floats[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL,
                                          MPI_DOUBLE_PRECISION, MPI_C_FLOAT_COMPLEX,
                                          MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX,
                                          MPI_COMPLEX, MPI_DOUBLE_COMPLEX};
    static const MPI_Datatype other[] = {MPI_BYTE, MPI_C_BOOL, MPI_LOGICAL, MPI_PACKED};
    if (combiner != MPI_COMBINER_NAMED || ct_in_list(type, other, sizeof other / sizeof *other))
        *cls = CT_PROOF_DT_OTHER;
    else if (ct_in_list(type, int8, sizeof int8 / sizeof *int8))
        *cls = CT_PROOF_DT_INT8;
    else if (ct_in_list(type, floats, sizeof floats / sizeof *floats))
        *cls = CT_PROOF_DT_FLOAT;
    else
        *cls = CT_PROOF_DT_INT;
    return MPI_SUCCESS;
}

static int ct_op_class(MPI_Op op, int *cls)
{
    static const MPI_Op builtin[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND,
                                     MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC,
                                     MPI_REPLACE};
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
        if (op == builtin[i]) {
            *cls = CT_PROOF_OP_BUILTIN;
            return MPI_SUCCESS;
        }
    int commute = 0;
    int err = PMPI_Op_commutative(op, &commute);
    *cls = commute ? CT_PROOF_OP_USER_COMM : CT_PROOF_OP_USER_NONCOMM;
    return err;
}

int ct_proof_class(int coll, int in_place, MPI_Op op, MPI_Datatype datatype)
{
    int dt = CT_PROOF_DT_ANY, oc = CT_PROOF_OP_NONE;
    if (ct_collectives[coll].has_op
        && (ct_dt_class(datatype, &dt) != MPI_SUCCESS || ct_op_class(op, &oc) != MPI_SUCCESS))
        return -1;
    return ((in_place ? 1 : 0) * CT_PROOF_OPS + oc) * CT_PROOF_DTS + dt;
}

uint64_t ct_proof_required(const ct_call *call)
{
    int in_place;
    switch (call->coll) {
    case CT_COLL_BCAST:
        in_place = 0;
        break;
    case CT_COLL_GATHER:
    case CT_COLL_SCATTER:
    case CT_COLL_REDUCE:
        in_place = -1;   /* root-only: both modes */
        break;
    default:
        in_place = call->sendbuf == MPI_IN_PLACE;
        break;
    }
    uint64_t mask = 0;
    for (int ip = 0; ip <= 1; ip++) {
        if (in_place >= 0 && ip != in_place)
            continue;
        int cls = ct_proof_class(call->coll, ip, call->op, call->recvtype);
        if (cls < 0)
            return 0;
        mask |= (uint64_t)1 << cls;
    }
    return mask;
}

void ct_proof_class_name(int cls, char *out, size_t len)
{
    int dt = cls % CT_PROOF_DTS, op = cls / CT_PROOF_DTS % CT_PROOF_OPS;
    snprintf(out, len, "%s/%s/%s", cls / (CT_PROOF_DTS * CT_PROOF_OPS) ? "in_place" : "separate",
             ct_op_names[op], ct_dt_names[dt]);
}

/* Index of the `len` bytes at `word` in `names`, or -1. */
static int ct_name_index(const char *const *names, int n, const char *word, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], word, len) == 0)
            return i;
    return -1;
}

/* The inverse of ct_proof_class_name, word by word: a proof file holds hundreds of class names,
 * read at every MPI_Init that uses members, so no formatting of every candidate. */
int ct_proof_class_parse(const char *name)
{
    static const char *const places[2] = {"separate", "in_place"};
    const char *op = strchr(name, '/');
    const char *dt = op != NULL ? strchr(op + 1, '/') : NULL;
    if (dt == NULL)
        return -1;
    int ip = ct_name_index(places, 2, name, (size_t)(op - name));
    int oc = ct_name_index(ct_op_names, CT_PROOF_OPS, op + 1, (size_t)(dt - op - 1));
    int dc = ct_name_index(ct_dt_names, CT_PROOF_DTS, dt + 1, strlen(dt + 1));
    if (ip < 0 || oc < 0 || dc < 0)
        return -1;
    return (ip * CT_PROOF_OPS + oc) * CT_PROOF_DTS + dc;
}

uint64_t ct_proof_possible(int coll)
{
    uint64_t mask = 0;
    int reduction = ct_collectives[coll].has_op;
    for (int cls = 0; cls < CT_PROOF_CLASSES; cls++) {
        int dt = cls % CT_PROOF_DTS, op = cls / CT_PROOF_DTS % CT_PROOF_OPS;
        int ip = cls / (CT_PROOF_DTS * CT_PROOF_OPS);
        if ((dt == CT_PROOF_DT_ANY) == reduction || (op == CT_PROOF_OP_NONE) == reduction)
            continue;
        if (ip && coll == CT_COLL_BCAST)
            continue;
        mask |= (uint64_t)1 << cls;
    }
    return mask;
}

/*
 * Case classes of the proof: shared by the selftest (which records them) and the runtime (which
 * serves a member only in the classes it passed). See ct_proof.h for what is uniform.
 */
#include <stdio.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_proof.h"

static const char *const ct_dt_names[CT_PROOF_DTS] = {"any", "int8", "int16", "int", "float",
                                                      "other"};
static const char *const ct_op_names[CT_PROOF_OPS] = {"none", "builtin", "user_commutative",
                                                      "user_noncommutative"};
/* Lower bounds in bytes; docs/select.md names the bands this way. */
static const int64_t ct_band_low[CT_PROOF_BANDS] = {0, 16, 2048, 65536};
static const char *const ct_band_names[CT_PROOF_BANDS] = {"0-15B", "16-2047B", "2048-65535B",
                                                          "65536B+"};

static int ct_in_list(MPI_Datatype type, const MPI_Datatype *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] != MPI_DATATYPE_NULL && type == list[i])
            return 1;
    return 0;
}

/* Integers by width: Open MPI 5.0's op/avx saturates 8- and 16-bit sums instead of wrapping, so
 * there the result depends on how each algorithm splits and combines the vector (MPI-NOTES). */
static int ct_dt_class(MPI_Datatype type, int *cls)
{
    int ni, na, nd, combiner, size = 0;
    int err = PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (err == MPI_SUCCESS)
        err = PMPI_Type_size(type, &size);
    if (err != MPI_SUCCESS)
        return err;
    static const MPI_Datatype floats[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL,
                                          MPI_DOUBLE_PRECISION, MPI_C_FLOAT_COMPLEX,
                                          MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX,
                                          MPI_COMPLEX, MPI_DOUBLE_COMPLEX};
    static const MPI_Datatype other[] = {MPI_BYTE, MPI_C_BOOL, MPI_LOGICAL, MPI_PACKED};
    if (combiner != MPI_COMBINER_NAMED || ct_in_list(type, other, sizeof other / sizeof *other))
        *cls = CT_PROOF_DT_OTHER;
    else if (ct_in_list(type, floats, sizeof floats / sizeof *floats))
        *cls = CT_PROOF_DT_FLOAT;
    else
        *cls = size == 1 ? CT_PROOF_DT_INT8 : size == 2 ? CT_PROOF_DT_INT16 : CT_PROOF_DT_INT;
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

int ct_proof_band(int64_t bytes)
{
    int band = 0;
    while (band + 1 < CT_PROOF_BANDS && bytes >= ct_band_low[band + 1])
        band++;
    return band;
}

static int ct_class_index(int in_place, int oc, int dt, int band)
{
    return ((in_place * CT_PROOF_OPS + oc) * CT_PROOF_DTS + dt) * CT_PROOF_BANDS + band;
}

int ct_proof_class(int coll, int in_place, MPI_Op op, MPI_Datatype datatype, int64_t bytes)
{
    int dt = CT_PROOF_DT_ANY, oc = CT_PROOF_OP_NONE;
    if (ct_collectives[coll].has_op
        && (ct_dt_class(datatype, &dt) != MPI_SUCCESS || ct_op_class(op, &oc) != MPI_SUCCESS))
        return -1;
    /* A user's op does its own arithmetic: the width matters only to op/avx's built-in ones. */
    if ((oc == CT_PROOF_OP_USER_COMM || oc == CT_PROOF_OP_USER_NONCOMM)
        && (dt == CT_PROOF_DT_INT8 || dt == CT_PROOF_DT_INT16))
        dt = CT_PROOF_DT_INT;
    return ct_class_index(in_place ? 1 : 0, oc, dt, ct_proof_band(bytes));
}

int ct_proof_required(const ct_call *call, ct_proof_set *out)
{
    int in_place;
    switch (ct_collectives[call->coll].in_place) {
    case CT_IN_PLACE_NONE:
        in_place = 0;
        break;
    case CT_IN_PLACE_SENDBUF:
        in_place = call->sendbuf == MPI_IN_PLACE;
        break;
    default:
        in_place = -1;   /* root-only: both modes */
        break;
    }
    *out = (ct_proof_set){{0}};
    int64_t bytes = colltune_call_bytes(call);
    if (bytes < 0)
        return MPI_ERR_ARG;
    for (int ip = 0; ip <= 1; ip++) {
        if (in_place >= 0 && ip != in_place)
            continue;
        int cls = ct_proof_class(call->coll, ip, call->op, call->recvtype, bytes);
        if (cls < 0)
            return MPI_ERR_TYPE;
        ct_proof_set_add(out, cls);
    }
    return MPI_SUCCESS;
}

int ct_proof_sized(int cls)
{
    int dt = cls / CT_PROOF_BANDS % CT_PROOF_DTS;
    int op = cls / (CT_PROOF_BANDS * CT_PROOF_DTS) % CT_PROOF_OPS;
    return op == CT_PROOF_OP_BUILTIN
        && (dt == CT_PROOF_DT_INT8 || dt == CT_PROOF_DT_INT16 || dt == CT_PROOF_DT_FLOAT);
}

void ct_proof_sized_set(ct_proof_set *out)
{
    *out = (ct_proof_set){{0}};
    for (int cls = 0; cls < CT_PROOF_CLASSES; cls++)
        if (ct_proof_sized(cls))
            ct_proof_set_add(out, cls);
}

const char *ct_proof_band_name(int band)
{
    return band >= 0 && band < CT_PROOF_BANDS ? ct_band_names[band] : "?";
}

void ct_proof_class_name(int cls, char *out, size_t len)
{
    int band = cls % CT_PROOF_BANDS, dt = cls / CT_PROOF_BANDS % CT_PROOF_DTS;
    int op = cls / (CT_PROOF_BANDS * CT_PROOF_DTS) % CT_PROOF_OPS;
    int ip = cls / (CT_PROOF_BANDS * CT_PROOF_DTS * CT_PROOF_OPS);
    snprintf(out, len, "%s/%s/%s/%s", ip ? "in_place" : "separate", ct_op_names[op],
             ct_dt_names[dt], ct_band_names[band]);
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
 * read at every MPI_Init that uses members, so no formatting of every candidate. A name without
 * its band (what the proof writes for a member that passed every band) stands for all four. */
int ct_proof_class_parse(const char *name, ct_proof_set *out)
{
    static const char *const places[2] = {"separate", "in_place"};
    const char *op = strchr(name, '/');
    const char *dt = op != NULL ? strchr(op + 1, '/') : NULL;
    if (dt == NULL)
        return -1;
    const char *band = strchr(dt + 1, '/');
    const char *dt_end = band != NULL ? band : dt + 1 + strlen(dt + 1);
    int ip = ct_name_index(places, 2, name, (size_t)(op - name));
    int oc = ct_name_index(ct_op_names, CT_PROOF_OPS, op + 1, (size_t)(dt - op - 1));
    int dc = ct_name_index(ct_dt_names, CT_PROOF_DTS, dt + 1, (size_t)(dt_end - dt - 1));
    int bc = band != NULL ? ct_name_index(ct_band_names, CT_PROOF_BANDS, band + 1,
                                          strlen(band + 1)) : -2;
    if (ip < 0 || oc < 0 || dc < 0 || bc == -1)
        return -1;
    for (int b = 0; b < CT_PROOF_BANDS; b++)
        if (bc < 0 || b == bc)
            ct_proof_set_add(out, ct_class_index(ip, oc, dc, b));
    return 0;
}

void ct_proof_possible(int coll, ct_proof_set *out)
{
    *out = (ct_proof_set){{0}};
    int reduction = ct_collectives[coll].has_op;
    for (int cls = 0; cls < CT_PROOF_CLASSES; cls++) {
        int dt = cls / CT_PROOF_BANDS % CT_PROOF_DTS;
        int op = cls / (CT_PROOF_BANDS * CT_PROOF_DTS) % CT_PROOF_OPS;
        int ip = cls / (CT_PROOF_BANDS * CT_PROOF_DTS * CT_PROOF_OPS);
        if ((dt == CT_PROOF_DT_ANY) == reduction || (op == CT_PROOF_OP_NONE) == reduction)
            continue;
        if (ip && ct_collectives[coll].in_place == CT_IN_PLACE_NONE)
            continue;
        ct_proof_set_add(out, cls);
    }
}

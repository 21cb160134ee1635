/*
 * Datatypes, ops and input contents of the selftest.
 *
 * Derived datatypes are built from MPI_INT: a contiguous one (3 ints) and a vector with a gap
 * (2 blocks of 1 int, stride 2: 8 bytes of data in 12 bytes of extent). Both MPI libraries
 * reject predefined ops on derived datatypes, so reductions on them use the user-defined ops.
 */
#include "st.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static MPI_Datatype st_contig_type = MPI_DATATYPE_NULL;
static MPI_Datatype st_vector_type = MPI_DATATYPE_NULL;

static uint64_t st_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

uint64_t st_salt;

static uint64_t st_hash(int rank, int64_t slot)
{
    return st_mix(((uint64_t)(uint32_t)rank << 40) ^ (uint64_t)slot ^ 0x9e3779b97f4a7c15ULL
                  ^ st_salt);
}

/* From the case's uniform parameters, so every rank of a communicator salts a case alike (the
 * library finding recomputes the other ranks' inputs). */
uint64_t st_case_salt(const char *type, int coll, int op, int count, int root, int in_place,
                      unsigned rep)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = type; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    uint64_t params = ((uint64_t)(unsigned)coll << 56) ^ ((uint64_t)(unsigned)op << 48)
                      ^ ((uint64_t)(unsigned)count << 16) ^ ((uint64_t)(unsigned)(root + 1) << 4)
                      ^ (uint64_t)(unsigned)in_place ^ ((uint64_t)rep << 40);
    return st_mix(h ^ st_mix(params));
}

/* Small enough that a sum over 8 ranks never overflows int (MPI_SUM on MPI_INT). */
int32_t st_int_value(int rank, int64_t slot)
{
    return (int32_t)(st_hash(rank, slot) % 20001) - 10000;
}

/* Magnitudes from 2^-20 to 2^20 and both signs: sums round, and differently in another order. */
double st_double_value(int rank, int64_t slot)
{
    uint64_t h = st_hash(rank, slot);
    double mantissa = (double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    /* mantissa * 2^exponent, exact (no underflow from 2^-20): the bits of the loop of
     * multiplications this replaced, without its 10 steps per value on average, in the input
     * generation that is half of the proof's CPU (benchmarks/scale/README.md, "The proof's
     * P^2") */
    return ldexp(mantissa, (int)((h & 0x3f) % 41) - 20);
}

unsigned char st_byte_value(int rank, int64_t slot)
{
    return (unsigned char)(st_hash(rank, slot) >> 24);
}

/* Magnitudes from 2^-12 to 2^12 and both signs: float sums round, differently in another order. */
float st_float_value(int rank, int64_t slot)
{
    uint64_t h = st_hash(rank, slot) ^ 0x5bd1e995u;
    float mantissa = (float)(h >> 40) / 16777216.0f * 2.0f - 1.0f;
    return ldexpf(mantissa, (int)((h & 0x3f) % 25) - 12);
}

void st_fill(void *buf, int64_t bytes, enum st_kind kind, int rank, int64_t first_slot)
{
    if (kind == ST_BYTE || kind == ST_UINT8 || kind == ST_RAW) {
        unsigned char *b = buf;
        for (int64_t i = 0; i < bytes; i++) b[i] = st_byte_value(rank, first_slot + i);
    } else if (kind == ST_DOUBLE) {
        for (int64_t i = 0; i < bytes / 8; i++) {
            double v = st_double_value(rank, first_slot + i);
            memcpy((char *)buf + 8 * i, &v, 8);
        }
    } else if (kind == ST_FLOAT) {
        for (int64_t i = 0; i < bytes / 4; i++) {
            float v = st_float_value(rank, first_slot + i);
            memcpy((char *)buf + 4 * i, &v, 4);
        }
    } else {
        for (int64_t i = 0; i < bytes / 4; i++) {
            int32_t v = st_int_value(rank, first_slot + i);
            memcpy((char *)buf + 4 * i, &v, 4);
        }
    }
}

/* The int slots of `len` elements of `type` that hold data (vector: slots 0 and 2 of 3). */
static int st_int_slots(MPI_Datatype type, int len, int64_t *slots, int64_t *stride, int *per)
{
    if (type == MPI_INT) {
        *slots = len, *stride = 1, *per = 1;
    } else if (type == st_contig_type) {
        *slots = 3 * (int64_t)len, *stride = 1, *per = 1;
    } else if (type == st_vector_type) {
        *slots = len, *stride = 3, *per = 2;
    } else {
        return -1;
    }
    return 0;
}

typedef uint32_t (*st_combine)(uint32_t in, uint32_t inout);

static void st_apply(void *invec, void *inoutvec, int *len, MPI_Datatype *type, st_combine f)
{
    int64_t slots, stride;
    int per;
    if (st_int_slots(*type, *len, &slots, &stride, &per) != 0) {
        fprintf(stderr, "colltune-selftest: user op called with an unexpected datatype\n");
        PMPI_Abort(MPI_COMM_WORLD, 3);
        return;
    }
    uint32_t *in = invec, *inout = inoutvec;
    for (int64_t e = 0; e < slots; e++)
        for (int k = 0; k < per; k++) {
            int64_t i = e * stride + 2 * k;
            inout[i] = f(in[i], inout[i]);
        }
}

static uint32_t st_add(uint32_t in, uint32_t inout)
{
    return in + inout;
}

/* An affine map x -> a*x + b over Z/2^16 packed as a<<16 | b; the op composes "in, then
 * inout": exact, associative, not commutative, and every bit pattern is a valid operand. */
static uint32_t st_compose(uint32_t in, uint32_t inout)
{
    uint32_t a1 = in >> 16, b1 = in & 0xffff, a2 = inout >> 16, b2 = inout & 0xffff;
    uint32_t a = (a1 * a2) & 0xffff, b = (a2 * b1 + b2) & 0xffff;
    return a << 16 | b;
}

static void st_user_comm(void *invec, void *inoutvec, int *len, MPI_Datatype *type)
{
    st_apply(invec, inoutvec, len, type, st_add);
}

static void st_user_noncomm(void *invec, void *inoutvec, int *len, MPI_Datatype *type)
{
    st_apply(invec, inoutvec, len, type, st_compose);
}

int st_caller_count;
long st_count_misuse;

static void st_user_count(void *invec, void *inoutvec, int *len, MPI_Datatype *type)
{
    if (*len != st_caller_count) st_count_misuse++;
    st_apply(invec, inoutvec, len, type, st_compose);
}

static void st_describe(st_type *t, const char *name, enum st_kind kind, MPI_Datatype type)
{
    int size;
    MPI_Aint lb, extent, true_lb, true_extent;
    PMPI_Type_size(type, &size);
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    t->name = name;
    t->kind = kind;
    t->type = type;
    t->size = size;
    t->extent = extent;
    t->contiguous = lb == 0 && true_lb == 0 && extent == size && true_extent == size;
    t->odd_type = type, t->odd_factor = 1, t->odd_extent = extent;
}

void st_types_init(st_type types[ST_NUM_TYPES])
{
    PMPI_Type_contiguous(3, MPI_INT, &st_contig_type);
    PMPI_Type_commit(&st_contig_type);
    PMPI_Type_vector(2, 1, 2, MPI_INT, &st_vector_type);
    PMPI_Type_commit(&st_vector_type);
    st_describe(&types[ST_BYTE], "MPI_BYTE", ST_BYTE, MPI_BYTE);
    st_describe(&types[ST_INT], "MPI_INT", ST_INT, MPI_INT);
    st_describe(&types[ST_DOUBLE], "MPI_DOUBLE", ST_DOUBLE, MPI_DOUBLE);
    st_describe(&types[ST_CONTIG], "contiguous(3,MPI_INT)", ST_CONTIG, st_contig_type);
    st_describe(&types[ST_VECTOR], "vector(2,1,2,MPI_INT)", ST_VECTOR, st_vector_type);
    st_describe(&types[ST_MIXED], "vector(2,1,2,MPI_INT)|2xMPI_INT", ST_MIXED, st_vector_type);
    st_describe(&types[ST_UINT8], "MPI_UINT8_T", ST_UINT8, MPI_UINT8_T);
    types[ST_MIXED].odd_type = MPI_INT, types[ST_MIXED].odd_factor = 2;
    types[ST_MIXED].odd_extent = 4;
}

/* Every integer width and the char types, signed and unsigned, with every bit pattern as input;
 * float and double with values whose sums round differently in every order. */
void st_sweep_types_init(st_type types[ST_SWEEP_TYPES])
{
    static const struct { const char *name; enum st_kind kind; } names[ST_SWEEP_TYPES] = {
        {"MPI_INT8_T", ST_RAW}, {"MPI_UINT8_T", ST_RAW}, {"MPI_UNSIGNED_CHAR", ST_RAW},
        {"MPI_SIGNED_CHAR", ST_RAW}, {"MPI_INT16_T", ST_RAW}, {"MPI_UINT16_T", ST_RAW},
        {"MPI_UINT32_T", ST_RAW}, {"MPI_INT64_T", ST_RAW}, {"MPI_UINT64_T", ST_RAW},
        {"MPI_FLOAT", ST_FLOAT}, {"MPI_DOUBLE", ST_DOUBLE}};
    const MPI_Datatype handles[ST_SWEEP_TYPES] = {
        MPI_INT8_T, MPI_UINT8_T, MPI_UNSIGNED_CHAR, MPI_SIGNED_CHAR, MPI_INT16_T, MPI_UINT16_T,
        MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T, MPI_FLOAT, MPI_DOUBLE};
    for (int i = 0; i < ST_SWEEP_TYPES; i++)
        st_describe(&types[i], names[i].name, names[i].kind, handles[i]);
}

void st_ops_init(st_op ops[ST_NUM_OPS])
{
    ops[ST_SUM] = (st_op){"MPI_SUM", ST_SUM, MPI_SUM, 1};
    ops[ST_MAX] = (st_op){"MPI_MAX", ST_MAX, MPI_MAX, 1};
    ops[ST_BOR] = (st_op){"MPI_BOR", ST_BOR, MPI_BOR, 1};
    ops[ST_PROD] = (st_op){"MPI_PROD", ST_PROD, MPI_PROD, 1};
    ops[ST_USER_COMM] = (st_op){"user_commutative", ST_USER_COMM, MPI_OP_NULL, 1};
    ops[ST_USER_NONCOMM] = (st_op){"user_noncommutative", ST_USER_NONCOMM, MPI_OP_NULL, 0};
    PMPI_Op_create(st_user_comm, 1, &ops[ST_USER_COMM].op);
    PMPI_Op_create(st_user_noncomm, 0, &ops[ST_USER_NONCOMM].op);
    ops[ST_USER_COUNT] = (st_op){"user_callers_count", ST_USER_COUNT, MPI_OP_NULL, 0};
    PMPI_Op_create(st_user_count, 0, &ops[ST_USER_COUNT].op);
}

int st_op_user(const st_op *op)
{
    return op->kind == ST_USER_COMM || op->kind == ST_USER_NONCOMM || op->kind == ST_USER_COUNT;
}

/* Which (op, datatype) pairs MPI defines: MPI_BYTE only with bitwise ops, MPI_DOUBLE not with
 * them, derived datatypes only with user-defined ops, no per-rank datatypes. MPI_PROD only in
 * the sweep (ST_RAW, ST_FLOAT), so the matrix stays as docs/variants.md counts it. */
int st_op_valid(const st_op *op, const st_type *type)
{
    switch (type->kind) {
    case ST_BYTE: return op->kind == ST_BOR;
    case ST_INT: return op->kind != ST_PROD;
    case ST_DOUBLE: return op->kind == ST_SUM || op->kind == ST_MAX;
    case ST_CONTIG:
    case ST_VECTOR: return st_op_user(op);
    case ST_MIXED: return 0; /* reductions take one datatype on all ranks */
    case ST_UINT8: return op->kind <= ST_BOR; /* the user ops combine 32-bit slots */
    case ST_RAW:
    case ST_FLOAT: return op->kind == ST_SUM || op->kind == ST_PROD || op->kind == ST_MAX;
    case ST_NUM_KINDS: break;
    }
    return 0;
}

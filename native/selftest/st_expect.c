/*
 * The applicability rules as the documentation states them (docs/variants.md), written here a
 * second time and independently of native/core/applicable.c: the selftest checks that the core
 * gives exactly these reasons. Only the variant names come from the catalog.
 */
#include "st.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum st_overflow {
    OV_NONE,
    OV_P_COUNT,    /* p * count elements in one inner call (reductions: uniform count) */
    OV_PM1_BYTES,  /* displacements; counts of data movement are bounded through n: (p-1) * n */
    OV_P_BYTES,    /* p * n (MPI_BYTE reductions, Bcast of p blocks) */
    OV_PADDED,     /* count rounded up to a multiple of p (reductions: uniform count) */
    OV_PADDED_BYTES, /* n rounded up to a multiple of p */
    OV_SUM,        /* sum of recvcounts */
};

enum st_scratch {
    SC_ZERO,       /* no scratch */
    SC_INTS,       /* a few arrays of p ints */
    SC_INTS_BLOCK, /* p ints and one block of n / p bytes */
    SC_N,          /* n bytes */
    SC_N_INTS,     /* n bytes + p ints */
    SC_PN,         /* p * n bytes */
    SC_2PN,        /* 2 * p * n bytes */
    SC_PADDED,     /* count rounded up to p equal blocks, in bytes */
    SC_PADDED_BYTES, /* n rounded up to a multiple of p */
    SC_CHUNKS,     /* a share of the chunks + 2 arrays of p ints */
};

/* MPICH family only: the mock-up hands MPI_Allgatherv another collective's per-rank layouts, which
 * MPICH's ring cuts by each rank's extent; refused (`size`) where MPICH picks the ring, from T
 * bytes on: 512 KiB on 1, 2, 4, 8, ... ranks, 80 KiB on the other sizes (docs/variants.md). */
enum st_ring {
    RING_NONE,
    RING_P_BYTES,  /* T = p * n (Allgather's p blocks) */
    RING_BYTES,    /* T = n (Bcast's one block, from the root) */
};

typedef struct st_rule {
    const char *name;
    int contiguous;            /* 2: only with MPI_IN_PLACE */
    int commutative;
    int predefined_op;         /* pads or splits the count: no user-defined op */
    enum st_overflow overflow;
    enum st_scratch scratch;
    int invertible;            /* MPI_SUM on an integer type (the matrix has no MPI_BXOR) */
    int equal_counts;          /* every block the same size */
    enum st_ring ring;
} st_rule;

static const st_rule st_rules[] = {
    {"allgather_as_gather_bcast", 0, 0, 0, OV_P_BYTES, SC_ZERO},
    {"allgather_as_alltoall", 0, 0, 0, OV_P_BYTES, SC_2PN},
    {"allgather_as_allreduce", 0, 0, 0, OV_P_BYTES, SC_PN},
    {"allgather_as_allgatherv", 0, 0, 0, OV_PM1_BYTES, SC_INTS, 0, 0, RING_P_BYTES},
    {"allreduce_as_reduce_bcast", 0, 0, 0, OV_NONE, SC_ZERO},
    {"allreduce_as_reducescatterblock_allgather", 1, 0, 1, OV_PADDED, SC_PADDED},
    {"allreduce_as_reducescatter_allgatherv", 1, 0, 1, OV_NONE, SC_INTS},
    {"alltoall_as_alltoallv", 0, 0, 0, OV_PM1_BYTES, SC_INTS},
    {"bcast_as_allgatherv", 0, 0, 0, OV_NONE, SC_INTS, 0, 0, RING_BYTES},
    {"bcast_as_scatter_allgather", 0, 0, 0, OV_PADDED_BYTES, SC_PADDED_BYTES},
    {"gather_as_allgather", 0, 0, 0, OV_P_BYTES, SC_PN},
    {"gather_as_gatherv", 0, 0, 0, OV_PM1_BYTES, SC_INTS},
    {"gather_as_reduce", 0, 0, 0, OV_P_BYTES, SC_PN},
    {"reduce_as_allreduce", 1, 0, 0, OV_NONE, SC_N},
    {"reduce_as_reducescatterblock_gather", 1, 0, 1, OV_PADDED, SC_PADDED},
    {"reduce_as_reducescatter_gatherv", 1, 0, 1, OV_NONE, SC_CHUNKS},
    {"reducescatterblock_as_reduce_scatter", 1, 0, 0, OV_P_COUNT, SC_N},
    {"reducescatterblock_as_reducescatter", 2, 0, 0, OV_NONE, SC_INTS_BLOCK},
    {"reducescatterblock_as_allreduce", 1, 0, 0, OV_P_COUNT, SC_N},
    {"scan_as_exscan_reducelocal", 1, 0, 0, OV_NONE, SC_N},
    {"scatter_as_bcast", 0, 0, 0, OV_P_BYTES, SC_PN},
    {"scatter_as_scatterv", 0, 0, 0, OV_PM1_BYTES, SC_INTS},
    {"reducescatter_as_allreduce", 1, 0, 0, OV_SUM, SC_N},
    {"reducescatter_as_reduce_scatterv", 1, 0, 0, OV_SUM, SC_N_INTS},
    {"barrier_as_allreduce", 0, 0, 0, OV_NONE, SC_ZERO},
    {"allgatherv_as_gatherv_bcast", 0, 0, 0, OV_NONE, SC_ZERO},
    {"allgatherv_as_allgather", 0, 0, 0, OV_P_BYTES, SC_PN, 0, 1},
    {"exscan_as_scan", 1, 0, 0, OV_NONE, SC_N, 1, 0},
};

#define ST_NUM_RULES ((int)(sizeof st_rules / sizeof st_rules[0]))

static const st_rule *st_rule_of(int variant)
{
    const char *name = colltune_variant_name(variant);
    for (int i = 0; name != NULL && i < ST_NUM_RULES; i++)
        if (strcmp(st_rules[i].name, name) == 0) return &st_rules[i];
    return NULL;
}

int st_rules_check_catalog(char *err, size_t errlen)
{
    if (ST_NUM_RULES != CT_NUM_VARIANTS) {
        snprintf(err, errlen, "the selftest knows %d variants, the catalog has %d", ST_NUM_RULES,
                 CT_NUM_VARIANTS);
        return -1;
    }
    for (int v = 0; v < CT_NUM_VARIANTS; v++)
        if (st_rule_of(v) == NULL) {
            snprintf(err, errlen, "the selftest has no rule for variant %s",
                     colltune_variant_name(v));
            return -1;
        }
    return 0;
}

static int st_overflows(enum st_overflow rule, int64_t p, int64_t count, int64_t n, int64_t sum)
{
    int64_t value = 0;
    switch (rule) {
    case OV_NONE: return 0;
    case OV_P_COUNT: value = p * count; break;
    case OV_PM1_BYTES: value = (p - 1) * n; break;
    case OV_P_BYTES: value = p * n; break;
    case OV_PADDED: value = (count + p - 1) / p * p; break;
    case OV_PADDED_BYTES: value = (n + p - 1) / p * p; break;
    case OV_SUM: value = sum; break;
    }
    return value > INT_MAX;
}

static int64_t st_scratch_bytes(enum st_scratch rule, int64_t p, int64_t count, int64_t elem,
                                int64_t n)
{
    int64_t ints = (int64_t)sizeof(int) * p;
    switch (rule) {
    case SC_ZERO: return 0;
    case SC_INTS: return 4 * ints;
    case SC_INTS_BLOCK: return ints + n / p;
    case SC_N: return n;
    case SC_N_INTS: return n + ints;
    case SC_PN: return p * n;
    case SC_2PN: return 2 * p * n;
    case SC_PADDED: return (count + p - 1) / p * p * elem;
    case SC_PADDED_BYTES: return (n + p - 1) / p * p;
    case SC_CHUNKS: {
        int64_t chunk = (int64_t)colltune_chunk_bytes() / (elem > 0 ? elem : 1);
        if (chunk < 1) chunk = 1;
        int64_t chunks = (count + chunk - 1) / chunk;
        return (chunks + p - 1) / p * chunk * elem + 2 * ints;
    }
    }
    return 0;
}

int64_t st_mpich_ring_bytes(int64_t p)
{
    int power_of_two = 0;
    for (int64_t q = 1; q <= p; q *= 2)
        power_of_two |= q == p;
    return power_of_two ? 512 * 1024 : 80 * 1024;
}

static int st_mpich_ring(enum st_ring rule, int64_t p, int64_t n)
{
#if defined(COLLTUNE_ABI_FAMILY_MPICH)
    return rule != RING_NONE && (rule == RING_P_BYTES ? p * n : n) >= st_mpich_ring_bytes(p);
#else
    (void)rule, (void)p, (void)n;
    return 0;
#endif
}

/* MPICH family: the launch moved MPICH's own Allgatherv choice, so the ring may run at any size:
 * GL4 and GL9 are not applicable at all, the reason named by the setting (the core's rule,
 * colltune_mpich_ring_settings, reads MPI_T and the environment; stated again here from the
 * environment alone, the way a launch sets them). */
#if defined(COLLTUNE_ABI_FAMILY_MPICH)
static int st_ring_setting_moves(const char *name, const char *keep1, const char *keep2)
{
    static const char *const prefixes[] = {"MPIR_CVAR_", "MPIR_PARAM_", "MPICH_"};
    for (int k = 0; k < 3; k++) {
        char var[128];
        snprintf(var, sizeof var, "%s%s", prefixes[k], name);
        const char *value = getenv(var);
        if (value != NULL && value[0] != '\0' && !(keep1 && strcasecmp(value, keep1) == 0)
            && !(keep2 && strcasecmp(value, keep2) == 0))
            return 1;
    }
    return 0;
}
#endif

static int st_mpich_ring_moved(void)
{
#if defined(COLLTUNE_ABI_FAMILY_MPICH)
    static int moved = -1;
    if (moved < 0)
        moved = st_ring_setting_moves("ALLGATHERV_INTRA_ALGORITHM", "auto", NULL)
                || st_ring_setting_moves("IALLGATHERV_INTRA_ALGORITHM", "auto", "sched_auto")
                || st_ring_setting_moves("ALLGATHERV_POSIX_INTRA_ALGORITHM", "mpir", NULL)
                || st_ring_setting_moves("COLL_SELECTION_TUNING_JSON_FILE", NULL, NULL)
                || st_ring_setting_moves("CH4_COLL_SELECTION_TUNING_JSON_FILE", NULL, NULL)
                || st_ring_setting_moves("CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE", NULL, NULL);
    return moved;
#else
    return 0;
#endif
}

/* CT4's `invertible`: MPI_SUM on a C integer type of the standard (the matrix has no
 * MPI_BXOR), as docs/variants.md states it. */
static int st_invertible(const st_case *c)
{
    static const MPI_Datatype integers[] = {
        MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED,
        MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_INT8_T,
        MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
        MPI_UINT64_T};
    if (c->op == NULL || c->op->kind != ST_SUM) return 0;
    for (size_t i = 0; i < sizeof integers / sizeof integers[0]; i++)
        if (c->type->type == integers[i]) return 1;
    return 0;
}

/* n: the call's message bytes as the table defines them (computed by the caller from the case).
 * The core may add up to 256 bytes of alignment slack to its scratch formulas: probes stay
 * clear of that margin. */
colltune_reason st_expected_reason(int variant, const st_case *c, int64_t n, const int *recvcounts)
{
    const st_rule *rule = st_rule_of(variant);
    if (rule == NULL) return COLLTUNE_NA_ERROR;
    if (c->comm->inter) return COLLTUNE_NA_INTERCOMM;
    if (rule->contiguous == 1 && !c->type->contiguous) return COLLTUNE_NA_DATATYPE;
    if (rule->contiguous == 2 && c->in_place && !c->type->contiguous) return COLLTUNE_NA_DATATYPE;
    if (rule->predefined_op && c->op != NULL && st_op_user(c->op)) return COLLTUNE_NA_OP;
    if (rule->invertible && !st_invertible(c)) return COLLTUNE_NA_OP;
    if (rule->equal_counts && !st_equal_blocks(c)) return COLLTUNE_NA_SIZE;
    if (rule->commutative && c->op != NULL && !c->op->commutative)
        return COLLTUNE_NA_NONCOMMUTATIVE;
    int64_t p = c->comm->size, sum = 0;
    if (recvcounts != NULL)
        for (int i = 0; i < p; i++) sum += recvcounts[i];
    if (st_overflows(rule->overflow, p, c->count, n, sum)) return COLLTUNE_NA_OVERFLOW;
    if (rule->ring != RING_NONE && st_mpich_ring_moved()) return COLLTUNE_NA_SETTING;
    if (st_mpich_ring(rule->ring, p, n)) return COLLTUNE_NA_SIZE;
    int64_t count = c->count;
    if (c->coll == CT_COLL_REDUCE_SCATTER_BLOCK) count = p * c->count;
    if (c->coll == CT_COLL_REDUCE_SCATTER) count = sum;
    int64_t need = st_scratch_bytes(rule->scratch, p, count, c->type->size, n);
    if (need > 0 && need + 256 > (int64_t)colltune_scratch_cap()) return COLLTUNE_NA_SCRATCH;
    return COLLTUNE_APPLICABLE;
}

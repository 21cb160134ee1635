/*
 * Applicability: can a variant give the library's exact result for a call?
 *
 * Every input to the decision is identical on all ranks of the communicator: the uniform
 * arguments of the table, the message bytes n (uniform by the type-signature rules), the
 * communicator size, the op and the settings. The layout of a datatype (`contiguous`) is looked
 * at only for reductions, whose datatype the standard requires to be the same on all ranks; the
 * data-movement variants work with any layout (docs/variants.md, "Datatypes").
 *
 * The checks run in a fixed order, so that a call that fails several rules always reports the
 * same reason: intercomm, datatype, op, size (equal blocks), noncommutative, overflow, size (the
 * library's own limits), scratch.
 */
#include "ct_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(COLLTUNE_ABI_FAMILY_MPICH)
#include "ct_mpit.h"
#endif

static const char *const ct_reason_names[COLLTUNE_REASON_COUNT] = {
    [COLLTUNE_APPLICABLE] = "applicable",
    [COLLTUNE_NA_INTERCOMM] = "intercomm",
    [COLLTUNE_NA_DATATYPE] = "datatype",
    [COLLTUNE_NA_NONCOMMUTATIVE] = "noncommutative",
    [COLLTUNE_NA_OP] = "op",
    [COLLTUNE_NA_OVERFLOW] = "overflow",
    [COLLTUNE_NA_IN_PLACE] = "in_place",
    [COLLTUNE_NA_SCRATCH] = "scratch",
    [COLLTUNE_NA_SIZE] = "size",
    [COLLTUNE_NA_ERROR] = "error",
    [COLLTUNE_NA_REFUSED] = "refused",
    [COLLTUNE_NA_UNAVAILABLE] = "unavailable",
    [COLLTUNE_NA_UNPROVEN] = "unproven",
    [COLLTUNE_NA_WARMUP] = "warmup",
    [COLLTUNE_NA_SETTING] = "setting",
};

/* The MPICH setting that moved the Allgatherv ring (colltune_mpich_ring_settings): its name is
 * the reason's, so a counting table says which setting to look at. */
static char ct_ring_name[CT_RING_SETTING_NAME], ct_ring_value[CT_RING_SETTING_VALUE];

const char *colltune_reason_name(colltune_reason reason)
{
    if ((int)reason < 0 || reason >= COLLTUNE_REASON_COUNT) return "unknown";
    if (reason == COLLTUNE_NA_SETTING && ct_ring_name[0] != '\0') return ct_ring_name;
    return ct_reason_names[reason];
}

/* The datatypes significant on this rank (at most two). */
static int ct_significant_types(const ct_call *call, MPI_Datatype types[2], int *ntypes)
{
    *ntypes = 0;
    int rank = 0, size;
    switch (call->coll) {
    case CT_COLL_ALLGATHER:
    case CT_COLL_ALLTOALL:
        types[(*ntypes)++] = call->recvtype;
        if (call->sendbuf != MPI_IN_PLACE) types[(*ntypes)++] = call->sendtype;
        return MPI_SUCCESS;
    case CT_COLL_GATHER: {
        int err = ct_comm_size_rank(call->comm, &size, &rank);
        if (err != MPI_SUCCESS) return err;
        if (rank == call->root) types[(*ntypes)++] = call->recvtype;
        if (call->sendbuf != MPI_IN_PLACE) types[(*ntypes)++] = call->sendtype;
        return MPI_SUCCESS;
    }
    case CT_COLL_SCATTER: {
        int err = ct_comm_size_rank(call->comm, &size, &rank);
        if (err != MPI_SUCCESS) return err;
        if (rank == call->root) types[(*ntypes)++] = call->sendtype;
        if (call->recvbuf != MPI_IN_PLACE) types[(*ntypes)++] = call->recvtype;
        return MPI_SUCCESS;
    }
    default: /* one datatype: Bcast's and the reductions' */
        types[(*ntypes)++] = call->recvtype;
        return MPI_SUCCESS;
    }
}

static colltune_reason ct_check_contiguous(const ct_call *call)
{
    MPI_Datatype types[2];
    int ntypes;
    if (ct_significant_types(call, types, &ntypes) != MPI_SUCCESS) return COLLTUNE_NA_ERROR;
    for (int i = 0; i < ntypes; i++) {
        int contiguous;
        if (ct_type_contiguous(types[i], &contiguous) != MPI_SUCCESS) return COLLTUNE_NA_ERROR;
        if (!contiguous) return COLLTUNE_NA_DATATYPE;
    }
    return COLLTUNE_APPLICABLE;
}

/* Every block of recvcounts holds as many bytes as the first: bytes, not counts, as the
 * receive datatype may differ by rank (then so do the counts, the bytes do not). */
static colltune_reason ct_check_equal_blocks(const ct_call *call)
{
    int p;
    if (PMPI_Comm_size(call->comm, &p) != MPI_SUCCESS) return COLLTUNE_NA_ERROR;
    for (int i = 1; i < p; i++)
        if (call->recvcounts[i] != call->recvcounts[0]) return COLLTUNE_NA_SIZE;
    return COLLTUNE_APPLICABLE;
}

static int ct_fits_int(int64_t value)
{
    return value >= 0 && value <= INT_MAX;
}

/* Padded element count of GL6/GL10/GL15: count rounded up to a multiple of p. */
static int64_t ct_padded(int64_t count, int64_t p)
{
    return (count + p - 1) / p * p;
}

static int64_t ct_sum_recvcounts(const ct_call *call, int64_t p)
{
    int64_t sum = 0;
    for (int64_t i = 0; i < p; i++) sum += call->recvcounts[i];
    return sum;
}

/* Does every int count the mock-up computes fit? Only reductions have uniform counts (count and
 * datatype must be equal on all ranks); elsewhere only type signatures must match, so counts are
 * bounded through the uniform n: a count of a datatype of at least one byte is at most n. */
static int ct_counts_fit(int variant, const ct_call *call, const ct_scratch_args *a)
{
    int64_t p = a->p, n = a->n, count = call->recvcount;
    switch ((enum ct_var_id)variant) {
    case CT_VAR_REDUCESCATTERBLOCK_AS_REDUCE_SCATTER: /* Reduce of p blocks */
    case CT_VAR_REDUCESCATTERBLOCK_AS_ALLREDUCE:
        return ct_fits_int(p * count);
    case CT_VAR_ALLGATHER_AS_GATHER_BCAST: /* Bcast of p blocks */
    case CT_VAR_ALLGATHER_AS_ALLTOALL: /* p*n bytes (un)packed, blocks of n bytes */
    case CT_VAR_GATHER_AS_ALLGATHER:
    case CT_VAR_ALLGATHER_AS_ALLREDUCE: /* p*n bytes reduced as MPI_BYTE */
    case CT_VAR_GATHER_AS_REDUCE:
    case CT_VAR_SCATTER_AS_BCAST: /* Bcast of p blocks */
    case CT_VAR_ALLGATHERV_AS_ALLGATHER: /* p blocks of n bytes as MPI_BYTE */
        return ct_fits_int(p * n);
    case CT_VAR_ALLGATHER_AS_ALLGATHERV: /* displacements */
    case CT_VAR_ALLTOALL_AS_ALLTOALLV:
    case CT_VAR_GATHER_AS_GATHERV:
    case CT_VAR_SCATTER_AS_SCATTERV:
        return ct_fits_int((p - 1) * n);
    case CT_VAR_BCAST_AS_SCATTER_ALLGATHER: /* padded bytes */
        return ct_fits_int(ct_padded(n, p));
    case CT_VAR_ALLREDUCE_AS_REDUCESCATTERBLOCK_ALLGATHER: /* padded vector */
    case CT_VAR_REDUCE_AS_REDUCESCATTERBLOCK_GATHER:
        return ct_fits_int(ct_padded(count, p));
    case CT_VAR_REDUCESCATTER_AS_ALLREDUCE: /* the whole vector and displacements */
    case CT_VAR_REDUCESCATTER_AS_REDUCE_SCATTERV:
        return ct_fits_int(ct_sum_recvcounts(call, p));
    case CT_VAR_ALLREDUCE_AS_REDUCE_BCAST:
    case CT_VAR_ALLREDUCE_AS_REDUCESCATTER_ALLGATHERV:
    case CT_VAR_BCAST_AS_ALLGATHERV:
    case CT_VAR_REDUCE_AS_ALLREDUCE:
    case CT_VAR_REDUCE_AS_REDUCESCATTER_GATHERV:
    case CT_VAR_REDUCESCATTERBLOCK_AS_REDUCESCATTER:
    case CT_VAR_SCAN_AS_EXSCAN_REDUCELOCAL:
    case CT_VAR_BARRIER_AS_ALLREDUCE:
    case CT_VAR_ALLGATHERV_AS_GATHERV_BCAST: /* the caller's own counts and displacements */
    case CT_VAR_EXSCAN_AS_SCAN:
    case CT_NUM_VARIANTS:
        return 1;
    }
    return 1;
}

int colltune_mpich_allgatherv_ring(int64_t p, int64_t total)
{
    int pow2 = p > 0 && (p & (p - 1)) == 0;
    return total >= (pow2 ? CT_MPICH_RING_POW2 : CT_MPICH_RING_OTHER);
}

const char *colltune_mpich_ring_setting(void)
{
    return ct_ring_name[0] != '\0' ? ct_ring_name : NULL;
}

const char *colltune_mpich_ring_setting_value(void)
{
    return ct_ring_name[0] != '\0' ? ct_ring_value : NULL;
}

#if defined(COLLTUNE_ABI_FAMILY_MPICH)
/* MPICH's settings that choose its MPI_Allgatherv (or MPI_Iallgatherv, which its `nb` runs, and
 * the lib:allgatherv:sched_ring members serve) away from the default selection the bound is
 * taken from, each with the values that leave that selection alone; a tuning file (any
 * non-empty path) replaces the selection itself. Measured on MPICH 5.0.2, 2 ranks, per-rank
 * layouts (benchmarks/proof/allgatherv_layouts.c): ALLGATHERV_INTRA_ALGORITHM=ring truncates
 * from 2,731 pairs (T = 43,696 bytes) and `nb` with IALLGATHERV_INTRA_ALGORITHM=sched_ring hangs
 * a root's block from 8,192 (T = 65,536), both far below 524,288; a tuning file that names the
 * ring truncates at 4,099. brucks, recursive_doubling and nb (with the nonblocking default) pass
 * at 70,000, but then MPICH's own choice is no ring at any size and the ring members would bring
 * one: any value but the default counts. Not counted, measured to leave the bound where it is:
 * ALLGATHERV_PIPELINE_MSG_SIZE (the ring's chunk, not its choice), ALLGATHER_SHORT_MSG_SIZE and
 * ALLGATHER_LONG_MSG_SIZE (unread by 5.0.2's selection), DEVICE_COLLECTIVES none and all. */
typedef struct ct_ring_var {
    const char *name;
    const char *keep[2];   /* algorithm names of the default choice; {NULL}: a path, empty keeps */
} ct_ring_var;

static const ct_ring_var ct_ring_vars[] = {
    {"MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM", {"auto", NULL}},
    {"MPIR_CVAR_IALLGATHERV_INTRA_ALGORITHM", {"auto", "sched_auto"}},
    {"MPIR_CVAR_ALLGATHERV_POSIX_INTRA_ALGORITHM", {"mpir", NULL}},
    {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", {NULL, NULL}},
    {"MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE", {NULL, NULL}},
    {"MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE", {NULL, NULL}},
};

/* Does `text`, an algorithm's name or a path, leave the default selection alone? */
static int ct_ring_keeps(const ct_ring_var *v, const char *text)
{
    if (text[0] == '\0') return 1;
    for (int k = 0; k < 2 && v->keep[k] != NULL; k++)
        if (strcasecmp(text, v->keep[k]) == 0) return 1;
    return 0;
}

/* The name MPICH's enumeration gives `value` of algorithm variable `index` into text, or its
 * number where the variable lists none (no `keep` matches a number: when in doubt, it counts). */
static void ct_ring_value_name(int index, int value, char *text, size_t len)
{
    char names[32][CT_MPIT_NAME];
    int values[32];
    int n = ct_mpit_list(index, names, values, 32);
    snprintf(text, len, "%d", value);
    for (int k = 0; k < n; k++)
        if (values[k] == value) snprintf(text, len, "%s", names[k]);
}

/* The value MPICH uses, through MPI_T, as text (an algorithm's name, or the path): 0, or -1 where
 * MPI_T cannot tell. */
static int ct_ring_read_mpit(const ct_ring_var *v, char *text, size_t len)
{
    int index, count;
    MPI_T_cvar_handle handle;
    if (ct_mpit_find(v->name, &index) != 0
        || MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return -1;
    int rc = -1;
    if (v->keep[0] == NULL) {   /* a string: MPI_CHAR of `count` bytes with its terminator */
        char *buf = count > 0 ? calloc((size_t)count + 1, 1) : NULL;
        if (buf != NULL && MPI_T_cvar_read(handle, buf) == MPI_SUCCESS) {
            snprintf(text, len, "%s", buf);
            rc = 0;
        }
        free(buf);
    } else {
        int value;
        if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS) {
            ct_ring_value_name(index, value, text, len);
            rc = 0;
        }
    }
    MPI_T_cvar_handle_free(&handle);
    return rc;
}

/* The environment, where MPI_T cannot answer: MPICH reads MPIR_CVAR_<X>, MPIR_PARAM_<X> and
 * MPICH_<X>. */
static void ct_ring_read_env(const ct_ring_var *v, char *text, size_t len)
{
    static const char *const prefixes[] = {"MPIR_CVAR_", "MPIR_PARAM_", "MPICH_"};
    const char *x = v->name + strlen("MPIR_CVAR_");
    text[0] = '\0';
    for (int k = 0; k < 3 && text[0] == '\0'; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefixes[k], x);
        const char *value = getenv(name);
        if (value != NULL) snprintf(text, len, "%s", value);
    }
}
#endif

const char *colltune_mpich_ring_settings(void)
{
    ct_ring_name[0] = ct_ring_value[0] = '\0';
#if defined(COLLTUNE_ABI_FAMILY_MPICH)
    int provided;
    int mpit = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    for (size_t i = 0; i < sizeof ct_ring_vars / sizeof ct_ring_vars[0]; i++) {
        const ct_ring_var *v = &ct_ring_vars[i];
        /* Both sources, either one moving it counts: MPI_T sees what MPICH uses, but MPICH
         * 5.0.2 reads its string variables (the tuning files) back empty through MPI_T even
         * when the launch set them (measured), so the environment is asked too. */
        if (!mpit || ct_ring_read_mpit(v, ct_ring_value, sizeof ct_ring_value) != 0
            || ct_ring_keeps(v, ct_ring_value))
            ct_ring_read_env(v, ct_ring_value, sizeof ct_ring_value);
        if (!ct_ring_keeps(v, ct_ring_value)) {
            snprintf(ct_ring_name, sizeof ct_ring_name, "%s", v->name);
            break;
        }
    }
    if (ct_ring_name[0] == '\0') ct_ring_value[0] = '\0';
    if (mpit) MPI_T_finalize();
#endif
    return colltune_mpich_ring_setting();
}

/* MPICH's MPI_Allgatherv cuts the blocks of its ring in chunks counted in each rank's own extent
 * (32768 / extent elements once a block exceeds 32768 bytes), so ranks whose layouts of one type
 * signature differ cut a block differently: "Message truncated" (benchmarks/proof/
 * allgatherv_layouts.c). Its default selection runs the ring from T = sum(recvcounts) x type
 * size bytes on (colltune_mpich_allgatherv_ring). A mock-up that hands MPI_Allgatherv the layouts
 * the application gave another collective (GL4: Allgather's, T = p n; GL9: Bcast's, T = n) may
 * do so only below that size, where MPICH runs Bruck's or recursive doubling, which keep whole
 * blocks; and not at all where the launch moved MPICH's choice (colltune_mpich_ring_settings),
 * as the ring may then run at any size. T comes from n and p alone, the settings are read alike
 * on every rank (and compared at MPI_Init): the same answer everywhere. Reductions'
 * Allgatherv (GL7) have one datatype everywhere. */
static colltune_reason ct_library_refuses(int variant, const ct_scratch_args *a)
{
#if defined(COLLTUNE_ABI_FAMILY_MPICH)
    if (variant != CT_VAR_ALLGATHER_AS_ALLGATHERV && variant != CT_VAR_BCAST_AS_ALLGATHERV)
        return COLLTUNE_APPLICABLE;
    if (ct_ring_name[0] != '\0') return COLLTUNE_NA_SETTING;
    int64_t total = variant == CT_VAR_ALLGATHER_AS_ALLGATHERV ? a->p * a->n : a->n;
    return colltune_mpich_allgatherv_ring(a->p, total) ? COLLTUNE_NA_SIZE : COLLTUNE_APPLICABLE;
#else
    (void)variant, (void)a;
    return COLLTUNE_APPLICABLE;
#endif
}

colltune_reason colltune_applicable(int variant, const ct_call *call)
{
    if (variant < 0 || variant >= CT_NUM_VARIANTS || call == NULL) return COLLTUNE_NA_ERROR;
    const ct_variant_info *v = &ct_variants[variant];
    if (v->coll != call->coll) return COLLTUNE_NA_ERROR;

    /* Inter-communicators first: sizes, roots and buffers mean something else there. */
    int inter;
    if (PMPI_Comm_test_inter(call->comm, &inter) != MPI_SUCCESS) return COLLTUNE_NA_ERROR;
    if (inter) return COLLTUNE_NA_INTERCOMM;

    if (v->needs & CT_NEED_CONTIGUOUS) {
        colltune_reason reason = ct_check_contiguous(call);
        if (reason != COLLTUNE_APPLICABLE) return reason;
    }
    /* GL18 in place copies its block out of scratch: raw bytes (MPI_IN_PLACE of
     * Reduce_scatter_block is given on all ranks or none, so this is uniform). */
    if (variant == CT_VAR_REDUCESCATTERBLOCK_AS_REDUCESCATTER && call->sendbuf == MPI_IN_PLACE) {
        colltune_reason reason = ct_check_contiguous(call);
        if (reason != COLLTUNE_APPLICABLE) return reason;
    }
    /* A user-defined op may handle only the count its caller passed: padding or blocks of the
     * vector would reach it. Predefined ops are uniform across ranks, so is this answer. */
    if ((v->needs & CT_NEED_PREDEFINED_OP) && !ct_op_predefined(call->op)) return COLLTUNE_NA_OP;
    /* The op and datatype of a reduction are the same on all ranks: so is this answer. */
    if ((v->needs & CT_NEED_INVERTIBLE) && !ct_op_invertible(call->op, call->recvtype))
        return COLLTUNE_NA_OP;
    if (v->needs & CT_NEED_EQUAL_COUNTS) {
        colltune_reason reason = ct_check_equal_blocks(call);
        if (reason != COLLTUNE_APPLICABLE) return reason;
    }
    if (v->needs & CT_NEED_COMMUTATIVE) {
        int commutative;
        if (PMPI_Op_commutative(call->op, &commutative) != MPI_SUCCESS) return COLLTUNE_NA_ERROR;
        if (!commutative) return COLLTUNE_NA_NONCOMMUTATIVE;
    }

    ct_scratch_args args;
    if (ct_scratch_args_of(call, &args) != MPI_SUCCESS) return COLLTUNE_NA_ERROR;
    if (!ct_counts_fit(variant, call, &args)) return COLLTUNE_NA_OVERFLOW;
    colltune_reason refused = ct_library_refuses(variant, &args);
    if (refused != COLLTUNE_APPLICABLE) return refused;

    int64_t need = v->scratch(&args);
    if (need > 0 && need + CT_SCRATCH_SLACK > (int64_t)colltune_scratch_cap())
        return COLLTUNE_NA_SCRATCH;
    return COLLTUNE_APPLICABLE;
}

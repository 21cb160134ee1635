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
};

const char *colltune_reason_name(colltune_reason reason)
{
    if ((int)reason < 0 || reason >= COLLTUNE_REASON_COUNT) return "unknown";
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

/* MPICH's MPI_Allgatherv cuts the blocks of its ring in chunks counted in each rank's own extent
 * (32768 / extent elements once a block exceeds 32768 bytes), so ranks whose layouts of one type
 * signature differ cut a block differently: "Message truncated" (benchmarks/proof/
 * allgatherv_layouts.c). Its default selection runs the ring from T = sum(recvcounts) x type
 * size bytes on (colltune_mpich_allgatherv_ring). A mock-up that hands MPI_Allgatherv the layouts
 * the application gave another collective (GL4: Allgather's, T = p n; GL9: Bcast's, T = n) may
 * do so only below that size, where MPICH runs Bruck's or recursive doubling, which keep whole
 * blocks. T comes from n and p alone: the same on every rank. Reductions' Allgatherv (GL7) have
 * one datatype everywhere. */
static int ct_library_refuses(int variant, const ct_scratch_args *a)
{
#if defined(COLLTUNE_ABI_FAMILY_MPICH)
    if (variant == CT_VAR_ALLGATHER_AS_ALLGATHERV)
        return colltune_mpich_allgatherv_ring(a->p, a->p * a->n);
    if (variant == CT_VAR_BCAST_AS_ALLGATHERV)
        return colltune_mpich_allgatherv_ring(a->p, a->n);
#else
    (void)variant, (void)a;
#endif
    return 0;
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
    if (ct_library_refuses(variant, &args)) return COLLTUNE_NA_SIZE;

    int64_t need = v->scratch(&args);
    if (need > 0 && need + CT_SCRATCH_SLACK > (int64_t)colltune_scratch_cap())
        return COLLTUNE_NA_SCRATCH;
    return COLLTUNE_APPLICABLE;
}

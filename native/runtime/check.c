/*
 * Check mode of the learning mode (COLLTUNE_SELECT_CHECK=1, validation runs only): an explored
 * call that a mock-up serves is also run by the library, from the same inputs, and the two
 * results are compared byte for byte on every rank. The application gets the library's result.
 *
 * Both collectives run on every rank whatever happens locally (skipping one would hang the
 * others), so the output buffer is saved before the variant runs (in-place calls and Bcast read
 * it as input) and restored before the library runs. This allocates on the call path and doubles
 * the work: not for production. Floating-point reductions may differ in the last bits: that is
 * what the check is for (docs/select.md, reproducible runs).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ct_runtime.h"
#include "ct_member.h"

static atomic_ullong ct_checked, ct_differed;
static atomic_int ct_first_coll = -1, ct_first_variant = -1;

/* The buffer this rank's result lands in: base address and span in bytes (0: none here). */
static int ct_output(const ct_call *c, char **base, size_t *span)
{
    int rank = 0, size = 1, count = c->recvcount;
    MPI_Datatype type = c->recvtype;
    void *buf = c->recvbuf;
    *span = 0;
    if (PMPI_Comm_rank(c->comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(c->comm, &size) != MPI_SUCCESS)
        return -1;
    switch (c->coll) {
    case CT_COLL_ALLGATHER:
    case CT_COLL_ALLTOALL:
        count = c->recvcount * size;
        break;
    case CT_COLL_GATHER:
        if (rank != c->root)
            return 0;
        count = c->recvcount * size;
        break;
    case CT_COLL_REDUCE:
        if (rank != c->root)
            return 0;
        break;
    case CT_COLL_SCATTER:
        if (rank == c->root && c->recvbuf == MPI_IN_PLACE)
            return 0;
        break;
    case CT_COLL_REDUCE_SCATTER:
        count = c->recvcounts[rank];
        break;
    default:
        break;
    }
    MPI_Aint lb, extent, tlb, textent;
    if (count <= 0)
        return 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS
        || PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS)
        return -1;
    *base = (char *)buf + tlb;
    *span = (size_t)((MPI_Aint)(count - 1) * extent + textent);
    return 0;
}

int ct_check_run(const ct_call *call, ct_decision *d)
{
    char *base = NULL;
    size_t span = 0;
    int known = ct_output(call, &base, &span) == 0;
    char *saved = span > 0 ? malloc(2 * span) : NULL;
    if (span > 0 && saved == NULL) {
        ct_message("error: COLLTUNE_SELECT_CHECK: no memory for %zu bytes (aborting: check mode "
                   "is for validation runs; unset it)", 2 * span);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (saved != NULL)
        memcpy(saved, base, span);
    int rc = ct_run_member(call, d);
    if (saved != NULL) {
        memcpy(saved + span, base, span);
        memcpy(base, saved, span);
    }
    int rc2 = colltune_invoke_library(call);
    if (known && rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && d->reason == COLLTUNE_APPLICABLE) {
        atomic_fetch_add_explicit(&ct_checked, 1, memory_order_relaxed);
        if (saved != NULL && memcmp(saved + span, base, span) != 0) {
            int none = -1;
            if (atomic_fetch_add_explicit(&ct_differed, 1, memory_order_relaxed) == 0
                && atomic_compare_exchange_strong(&ct_first_coll, &none, call->coll))
                atomic_store(&ct_first_variant, d->variant);
        }
    }
    free(saved);
    return rc2 != MPI_SUCCESS ? rc2 : rc;
}

void ct_check_report(int rank)
{
    unsigned long long n = atomic_load(&ct_checked), bad = atomic_load(&ct_differed);
    if (rank != 0 && bad == 0)
        return;
    if (bad == 0) {
        ct_message("check: rank 0 compared %llu explored calls with the library: all identical", n);
        return;
    }
    int v = atomic_load(&ct_first_variant);
    ct_message("check: rank %d compared %llu explored calls with the library: %llu differ (first: "
               "%s by %s)", rank, n, bad, colltune_collective_name(atomic_load(&ct_first_coll)),
               v >= 0 ? ct_member_name(v) : "?");
}

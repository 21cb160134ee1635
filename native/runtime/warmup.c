/*
 * The library's warm-up: the first calls of each communicator go to the library unchanged.
 *
 * MPICH (ch4, POSIX shared memory) counts, per communicator, the Bcast, Reduce, Barrier and
 * Allreduce calls that reach its node-level collectives, and switches them from point-to-point
 * algorithms to its release_gather algorithms once that count reaches
 * MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD (5 in MPICH 5.0.2; src/mpid/ch4/shm/posix/
 * posix_coll_release_gather.h: the counter is incremented, then compared, in each of the four).
 * The switch changes the order in which a floating-point sum is combined. A call that colltune
 * serves with a member moves the count (a mock-up's inner Bcast adds to it, a library algorithm
 * chosen through MPI_T may bypass it), so a later call that the library serves itself can take
 * the other path than in a plain run and return other bits: seen under every-call exploration,
 * MPICH, 4 ranks, tests/programs/reduction_hashes.c seed 2, call 15 (issue 37).
 *
 * So until colltune has passed that many counted calls to the library unchanged on a
 * communicator, every call there goes to the library: the library's count is then the plain
 * run's, at least the threshold, and from then on every counted call takes the same path in both
 * runs, whatever colltune serves. Counted are the calls the library itself counts on a single
 * node (Barrier; Bcast, and Reduce and Allreduce with a commutative op, of at least one element;
 * the library skips empty ones): a lower bound of its count, so the warm-up never ends early.
 * On a communicator spanning nodes the library counts on its node-level communicator, once per
 * call whose composition goes through it; large Bcasts may not, so there the bound is the
 * library's choice of composition (docs/select.md, "The library's warm-up").
 *
 * The length is read from MPI_T at MPI_Init (0 where the library has no such variable: Open MPI,
 * SimGrid) and COLLTUNE_LIBRARY_WARMUP overrides it. Per-communicator state: a keyval attribute
 * whose value is the count still to pass plus one, stored in the pointer itself (no allocation;
 * a duplicate starts again, as the library's own count does).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_mpit.h"
#include "ct_runtime.h"
#include "ct_settings.h"

#define CT_WARMUP_CVAR "MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD"

CT_HIDDEN unsigned ct_warmup_calls;
static int ct_warmup_keyval = MPI_KEYVAL_INVALID;

/* The library's threshold from MPI_T, or 0 when it has none (or MPI_T fails: then nothing
 * depends on a count colltune could move, as far as colltune can know). */
static unsigned ct_warmup_from_library(void)
{
    int provided, index, value = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return 0;
    MPI_T_cvar_handle handle;
    if (ct_mpit_find(CT_WARMUP_CVAR, &index) == 0 && ct_mpit_handle(index, &handle) == MPI_SUCCESS) {
        if (MPI_T_cvar_read(handle, &value) != MPI_SUCCESS || value < 0)
            value = 0;
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return (unsigned)value;
}

int ct_warmup_start(char *err, size_t len)
{
    const char *text = getenv(CT_ENV_LIBRARY_WARMUP);
    err[0] = '\0';
    ct_warmup_calls = 0;
    if (text == NULL || text[0] == '\0' || strcmp(text, "auto") == 0) {
        ct_warmup_calls = ct_warmup_from_library();
    } else {
        uint64_t v;
        if (ct_parse_u64(text, &v) != 0 || v > 1000000) {
            snprintf(err, len, "COLLTUNE_LIBRARY_WARMUP=%s is not `auto` or a number of calls up to "
                     "1000000; the library's own value is used", text);
            ct_warmup_calls = ct_warmup_from_library();
        } else {
            ct_warmup_calls = (unsigned)v;
        }
    }
    if (ct_warmup_calls > 0
        && PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN,
                                   &ct_warmup_keyval, NULL) != MPI_SUCCESS) {
        ct_warmup_keyval = MPI_KEYVAL_INVALID;   /* ct_warmup_pass then sends every call there */
    }
    return err[0] != '\0' ? -1 : 0;
}

void ct_warmup_stop(void)
{
    if (ct_warmup_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&ct_warmup_keyval);
    ct_warmup_keyval = MPI_KEYVAL_INVALID;
}

int ct_warmup_counted(const ct_call *call)
{
    int commutative = 0;
    switch (call->coll) {
    case CT_COLL_BARRIER:
        return 1;
    case CT_COLL_BCAST:
        return call->recvcount > 0;
    case CT_COLL_REDUCE:
    case CT_COLL_ALLREDUCE:
        return call->recvcount > 0 && PMPI_Op_commutative(call->op, &commutative) == MPI_SUCCESS
               && commutative;
    default:
        return 0;
    }
}

int ct_warmup_pass(const ct_call *call)
{
    if (ct_warmup_calls == 0)
        return 0;
    if (ct_warmup_keyval == MPI_KEYVAL_INVALID)
        return 1;   /* no state to end the warm-up with: the library serves everything */
    void *value;
    int found;
    if (PMPI_Comm_get_attr(call->comm, ct_warmup_keyval, &value, &found) != MPI_SUCCESS)
        return 1;
    uintptr_t left = found ? (uintptr_t)value - 1 : ct_warmup_calls;
    if (left == 0)
        return 0;
    uintptr_t now = left - (uintptr_t)ct_warmup_counted(call);
    if (now != left || !found)
        PMPI_Comm_set_attr(call->comm, ct_warmup_keyval, (void *)(now + 1));
    return 1;
}

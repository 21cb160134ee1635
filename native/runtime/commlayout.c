/*
 * The profile mode's per-layout rules (docs/profile.md, "Layouts"): each communicator's own node
 * layout, so that a sub-communicator living on one node of a 2 x 2 job is served by the 1 x 2
 * rules, not by the job's.
 *
 * The layout is computed by ct_comm_layout (core/layout.c, the learning mode's computation) at
 * the communicator's first profile decision that needs one (a collective with layout blocks):
 * the decision is a function of uniform values, so every rank of the communicator reaches that
 * point in the same call and the collectives inside line up. It is kept in a keyval attribute
 * as an integer (nodes << 32 | ppn of a uniform layout; 0: none, i.e. not uniform, an
 * inter-communicator, or not to be had), which a dup inherits (same group, same layout). A
 * one-entry cache per thread spares the attribute lookup (~140 instructions in Open MPI); the
 * attribute's delete callback bumps a generation that invalidates every cache, because a freed
 * communicator's handle can come back as a new one.
 *
 * As with the learning mode's keyval, a rank whose keyval cannot be created (out of memory at
 * MPI_Init) skips layouts while the others compute them: not agreed across ranks, like the
 * learning mode's, because it does not happen in practice.
 */
#include "ct_tls.h"
#include <stdatomic.h>
#include <stdint.h>

#include "ct_layout.h"
#include "ct_runtime.h"

_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "a layout is kept as a pointer-sized integer");

typedef struct ct_layout_cache {
    MPI_Comm comm;
    uintptr_t code;
    unsigned generation;
} ct_layout_cache;

static int ct_layout_keyval = MPI_KEYVAL_INVALID;
static atomic_uint ct_layout_generation = 1;
static _Thread_local ct_layout_cache ct_lcache CT_TLS_MODEL;

static int ct_layout_delete(MPI_Comm comm, int keyval, void *attribute, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attribute;
    (void)extra;
    atomic_fetch_add_explicit(&ct_layout_generation, 1, memory_order_release);
    return MPI_SUCCESS;
}

void ct_commlayout_start(void)
{
    if (ct_layout_keyval == MPI_KEYVAL_INVALID
        && PMPI_Comm_create_keyval(MPI_COMM_DUP_FN, ct_layout_delete, &ct_layout_keyval, NULL)
               != MPI_SUCCESS)
        ct_layout_keyval = MPI_KEYVAL_INVALID;
}

void ct_commlayout_stop(void)
{
    if (ct_layout_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&ct_layout_keyval);
    ct_layout_keyval = MPI_KEYVAL_INVALID;
    atomic_fetch_add_explicit(&ct_layout_generation, 1, memory_order_release);
}

/* Collective over `comm` unless it is an inter-communicator (a uniform condition). */
static uintptr_t ct_layout_make(MPI_Comm comm)
{
    int inter;
    ct_layout layout;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter
        || ct_comm_layout(comm, NULL, &layout) != MPI_SUCCESS || !ct_layout_uniform(&layout))
        return 0;
    return (uintptr_t)layout.nodes << 32 | (uintptr_t)layout.ppn_max;
}

static __attribute__((noinline)) uintptr_t ct_layout_lookup(MPI_Comm comm, unsigned generation)
{
    void *value = NULL;
    int found = 0;
    if (ct_layout_keyval == MPI_KEYVAL_INVALID
        || PMPI_Comm_get_attr(comm, ct_layout_keyval, &value, &found) != MPI_SUCCESS)
        return 0;
    uintptr_t code = (uintptr_t)value;
    if (!found) {
        code = ct_layout_make(comm);
        if (PMPI_Comm_set_attr(comm, ct_layout_keyval, (void *)code) != MPI_SUCCESS)
            return code;
    }
    ct_lcache = (ct_layout_cache){comm, code, generation};
    return code;
}

void ct_commlayout_of(MPI_Comm comm, int *nodes, int *ppn)
{
    unsigned generation = atomic_load_explicit(&ct_layout_generation, memory_order_acquire);
    uintptr_t code = ct_lcache.comm == comm && ct_lcache.generation == generation
                         ? ct_lcache.code
                         : ct_layout_lookup(comm, generation);
    *nodes = (int)(code >> 32);
    *ppn = (int)(code & 0xFFFFFFFFu);
}

/*
 * Scratch arena per communicator, kept in an MPI attribute.
 *
 * One block per communicator, grown on demand (at least doubling, never beyond the cap) and
 * reused by every later call: after the first few calls a mock-up costs no allocation. The block
 * is freed by the attribute's delete callback when the communicator is freed (or at
 * MPI_Finalize for MPI_COMM_WORLD / MPI_COMM_SELF). Duplicates do not inherit it (null copy
 * callback): they get their own arena the first time they need one.
 *
 * No lock on the arena: MPI forbids concurrent collectives on one communicator, and only
 * collectives use it. The keyval is process-wide by MPI's design; it is created once
 * (pthread_once) so that threads racing on their first call agree on it.
 */
#include "ct_arena.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct ct_arena {
    void *raw;   /* what malloc gave, for free */
    void *block; /* raw aligned up to CT_SCRATCH_ALIGN */
    size_t size;
} ct_arena;

static pthread_once_t ct_keyval_once = PTHREAD_ONCE_INIT;
static int ct_keyval = MPI_KEYVAL_INVALID;
static int ct_keyval_error = MPI_SUCCESS;

static int ct_arena_delete(MPI_Comm comm, int keyval, void *attribute, void *extra_state)
{
    (void)comm;
    (void)keyval;
    (void)extra_state;
    ct_arena *arena = attribute;
    free(arena->raw);
    free(arena);
    return MPI_SUCCESS;
}

static void ct_keyval_create(void)
{
    ct_keyval_error =
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ct_arena_delete, &ct_keyval, NULL);
}

static int ct_arena_of(MPI_Comm comm, ct_arena **arena)
{
    pthread_once(&ct_keyval_once, ct_keyval_create);
    if (ct_keyval_error != MPI_SUCCESS) return ct_keyval_error;
    return ct_comm_attr(comm, ct_keyval, sizeof **arena, (void **)arena);
}

static int ct_arena_grow(ct_arena *arena, size_t bytes, size_t cap)
{
    size_t size = arena->size > cap / 2 ? cap : 2 * arena->size;
    if (size < bytes) size = bytes;
    size = ct_align_up(size);
    if (size > cap) size = bytes; /* bytes <= cap: do not round past the cap */
    /* The old contents are dead between calls: free first, so that peak memory stays `size`. */
    free(arena->raw);
    arena->raw = arena->block = NULL;
    arena->size = 0;
    /* malloc aligned by hand, not aligned_alloc: under SMPI, smpicc turns malloc into SimGrid's,
     * which shares a block this large between the simulated ranks when the launch asks for it
     * (smpi/auto-shared-malloc-thresh: the bench's timing launches at scale, docs/smpi.md). */
    void *raw = malloc(ct_align_up(size) + CT_SCRATCH_ALIGN - 1);
    if (raw == NULL) return MPI_ERR_NO_MEM;
    arena->raw = raw;
    arena->block = (void *)ct_align_up((size_t)(uintptr_t)raw);
    arena->size = size;
    return MPI_SUCCESS;
}

int colltune_scratch(MPI_Comm comm, size_t bytes, void **buffer)
{
    size_t cap = colltune_scratch_cap();
    *buffer = NULL;
    if (bytes > cap) return MPI_ERR_NO_MEM;
    ct_arena *arena;
    int err = ct_arena_of(comm, &arena);
    if (err != MPI_SUCCESS) return err;
    if (arena->size < bytes || arena->block == NULL) {
        err = ct_arena_grow(arena, bytes == 0 ? 1 : bytes, cap == 0 ? 1 : cap);
        if (err != MPI_SUCCESS) return err;
    }
    *buffer = arena->block;
    return MPI_SUCCESS;
}

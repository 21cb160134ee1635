/*
 * The mock-ups' counts and displacements per communicator (ct_tables.h), in an MPI attribute.
 *
 * A few slots per communicator, each one table of 2p ints (counts, then displacements) under its
 * key: the shape and the scalars the table is made of. A call whose key is in a slot takes it as
 * it is; another key refills the least recently used slot (O(p), once per key change). The key
 * holds exactly what the entries depend on: a count in elements (the datatype itself does not
 * enter: the library scales counts by it), for chunks also the element size and the chunk
 * setting. GL8 needs two tables at once (send and receive counts); the least recently used
 * slot is never the one the same call just took. The root-only table of GL9 changes in two
 * entries when the root or the count changes, so it is patched in place rather than refilled.
 *
 * The attribute is freed by its delete callback when the communicator is freed (or at
 * MPI_Finalize for MPI_COMM_WORLD / MPI_COMM_SELF); duplicates do not inherit it (null copy
 * callback). No lock, as for the scratch arena (ct_arena.c): MPI forbids concurrent collectives
 * on one communicator, the mock-ups are blocking and only they use the tables.
 */
#include "ct_tables.h"

#include <pthread.h>
#include <stdlib.h>

#define CT_TABLE_SLOTS 4

typedef enum { CT_SHAPE_NONE, CT_SHAPE_EQUAL, CT_SHAPE_CHUNKS, CT_SHAPE_ROOT_ONLY } ct_shape;

typedef struct ct_table_key {
    ct_shape shape;
    int64_t count, elem, chunk; /* root-only: elem holds the root */
} ct_table_key;

typedef struct ct_table_slot {
    ct_table_key key;
    uint64_t used; /* the tables' clock at the last call that took this slot */
    int *counts;   /* 2p ints: counts, then displacements */
} ct_table_slot;

typedef struct ct_tables {
    uint64_t clock;
    ct_table_slot slot[CT_TABLE_SLOTS];
} ct_tables;

static pthread_once_t ct_tables_once = PTHREAD_ONCE_INIT;
static int ct_tables_keyval = MPI_KEYVAL_INVALID;
static int ct_tables_keyval_error = MPI_SUCCESS;

static int ct_tables_delete(MPI_Comm comm, int keyval, void *attribute, void *extra_state)
{
    (void)comm;
    (void)keyval;
    (void)extra_state;
    ct_tables *tables = attribute;
    for (int i = 0; i < CT_TABLE_SLOTS; i++) free(tables->slot[i].counts);
    free(tables);
    return MPI_SUCCESS;
}

static void ct_tables_keyval_create(void)
{
    ct_tables_keyval_error = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ct_tables_delete,
                                                     &ct_tables_keyval, NULL);
}

static int ct_tables_of(MPI_Comm comm, ct_tables **tables)
{
    pthread_once(&ct_tables_once, ct_tables_keyval_create);
    if (ct_tables_keyval_error != MPI_SUCCESS) return ct_tables_keyval_error;
    return ct_comm_attr(comm, ct_tables_keyval, sizeof **tables, (void **)tables);
}

static int ct_key_equal(const ct_table_key *a, const ct_table_key *b)
{
    return a->shape == b->shape && a->count == b->count && a->elem == b->elem &&
           a->chunk == b->chunk;
}

/* The slot holding `key` (*fresh = 0), or the least recently used one, emptied for it
 * (*fresh = 1; its arrays allocated). `shape_only` also takes a slot of the same shape under
 * another key (*fresh = 0), for a table the caller patches. */
static int ct_slot_for(MPI_Comm comm, int p, const ct_table_key *key, int shape_only,
                       ct_table_slot **slot, int *fresh)
{
    ct_tables *tables;
    int err = ct_tables_of(comm, &tables);
    if (err != MPI_SUCCESS) return ct_raise(comm, err);
    ct_table_slot *victim = &tables->slot[0];
    *slot = NULL;
    for (int i = 0; i < CT_TABLE_SLOTS && *slot == NULL; i++) {
        ct_table_slot *s = &tables->slot[i];
        if (ct_key_equal(&s->key, key) || (shape_only && s->key.shape == key->shape))
            *slot = s;
        else if (s->used < victim->used)
            victim = s;
    }
    *fresh = *slot == NULL;
    if (*fresh) {
        *slot = victim;
        victim->key.shape = CT_SHAPE_NONE;
        if (victim->counts == NULL) {
            victim->counts = malloc(2 * (size_t)p * sizeof(int));
            if (victim->counts == NULL) return ct_raise(comm, MPI_ERR_NO_MEM);
        }
    }
    (*slot)->used = ++tables->clock;
    return MPI_SUCCESS;
}

int ct_table_equal(MPI_Comm comm, int p, int count, const int **counts, const int **displs)
{
    if ((int64_t)(p - 1) * count > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    ct_table_key key = {CT_SHAPE_EQUAL, count, 0, 0};
    ct_table_slot *slot;
    int fresh;
    int err = ct_slot_for(comm, p, &key, 0, &slot, &fresh);
    if (err != MPI_SUCCESS) return err;
    if (fresh) {
        ct_fill_equal_blocks(p, count, slot->counts, slot->counts + p);
        slot->key = key;
    }
    *counts = slot->counts;
    *displs = slot->counts + p;
    return MPI_SUCCESS;
}

int ct_table_chunks(MPI_Comm comm, int p, int count, int64_t elem, const int **counts,
                    const int **displs)
{
    ct_table_key key = {CT_SHAPE_CHUNKS, count, elem, (int64_t)colltune_chunk_bytes()};
    ct_table_slot *slot;
    int fresh;
    int err = ct_slot_for(comm, p, &key, 0, &slot, &fresh);
    if (err != MPI_SUCCESS) return err;
    if (fresh) {
        ct_chunk_split(count, elem, p, slot->counts, slot->counts + p);
        slot->key = key;
    }
    *counts = slot->counts;
    *displs = slot->counts + p;
    return MPI_SUCCESS;
}

int ct_table_root_only(MPI_Comm comm, int p, int root, int count, const int **counts,
                       const int **displs)
{
    ct_table_key key = {CT_SHAPE_ROOT_ONLY, count, root, 0};
    ct_table_slot *slot;
    int fresh;
    int err = ct_slot_for(comm, p, &key, 1, &slot, &fresh);
    if (err != MPI_SUCCESS) return err;
    if (fresh) {
        memset(slot->counts, 0, 2 * (size_t)p * sizeof(int));
    } else {
        slot->counts[slot->key.elem] = 0; /* the previous root's entry */
    }
    slot->counts[root] = count;
    slot->key = key;
    *counts = slot->counts;
    *displs = slot->counts + p;
    return MPI_SUCCESS;
}

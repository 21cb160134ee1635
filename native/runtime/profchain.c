/*
 * Profiling mode: a call's site is its chain of return addresses, so that a call made through
 * the application's own communication layer (a `reduce()` template, PETSc's MPIU_Allreduce, a
 * `comm.sum()` helper) is told apart by the application line that called the layer. The front
 * end cuts each chain where the application's own code starts (advise/callsites.py).
 *
 * A chain is the return address into the caller of MPI_* (the site the wrappers take) and up to
 * CT_CHAIN_DEPTH - 1 return addresses above it, interned in a fixed table; its id, the call's
 * site for everything else (points, memo, patterns), is the address of the next free entry of a
 * dense array, ct_chain_ids (so the process's chains are numbered in the order they were first
 * met, and the memo tables, of CT_CHAIN_IDS entries indexed by `id >> 3`, give every chain its
 * own entry, whatever addresses the loader chose), and MPI_Finalize writes each chain's addresses
 * (`chain` lines).
 *
 * Only a new chain costs an unwind (profwalk.c's walk by the frames' kept rules, ~1,000
 * instructions once the rules are known; libgcc's _Unwind_Backtrace, ~28,000, where a frame's rule
 * is not one the walk takes). Each
 * thread remembers the chains it saw last by (site, anchor): the anchor is an address in the
 * wrapper's own frame, so the same anchor means the same stack depth at the call, and then the
 * return address of each frame of a known chain sits at the same stack slot as when it was
 * unwound. A call reads those slots (one load per frame) and compares their hash with the
 * chain's (ct_chain_mix, ct_profrun_impl.h): equal, it is that chain; else the next one its set
 * remembers, else an unwind. All the chain's slots are read (ct_profchain_is): a frame's
 * position depends only on the frames below it, so past a differing frame a slot may hold
 * anything, and the answer is "not this chain" all the same; every slot is in this thread's
 * stack above the wrapper's frame. The slot of a return address is the CFA of the frame it
 * returns from, less 8, on x86-64 (the call pushed it there); elsewhere a chain is its site
 * alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "ct_profrun_impl.h"
#include "ct_runtime.h"
#include "ct_settings.h"

#define CT_CHAIN_SLOTS 4096
/* Each thread's entries, in chunks that are never moved nor freed before MPI_Finalize (hints
 * point at them), at most CT_CHAIN_SEEN_MAX (a chain met beyond that is unwound at each call:
 * a recursive code reaches one MPI call with one stack depth through many callers above it,
 * ExaML: 60 chains at one site, 167 in all). */
#define CT_CHAIN_CHUNK 256
#define CT_CHAIN_SEEN_MAX 16384
_Static_assert((CT_CHAIN_SLOTS & (CT_CHAIN_SLOTS - 1)) == 0, "a power of two (ct_table_probe)");
_Static_assert(CT_CHAIN_IDS >= CT_CHAIN_SLOTS, "an id for every chain the table holds");

typedef struct ct_chain_key {
    const void *ra[CT_CHAIN_DEPTH];   /* [0]: the site; zeros after the chain's end */
} ct_chain_key;

typedef struct ct_chain_slot {
    atomic_int state;                 /* 0 empty, 2 ready (ct_table_probe) */
    ct_chain_key key;
    _Atomic(const void *) id;         /* its entry of ct_chain_ids (not part of the key) */
} ct_chain_slot;

static ct_chain_slot ct_chains[CT_CHAIN_SLOTS];
static atomic_uint ct_chain_cells[CT_CHAIN_SLOTS];
static ct_table ct_chain_table = {0, ct_chain_cells};
/* The chains' ids: entry n is the n-th chain's slot. An id was the slot's address, whose memo
 * entry (`id >> 3`) followed the hash of the chain's return addresses, so the load addresses:
 * which of OpenFOAM's chains shared an entry (and took the full path at every call) changed from
 * run to run, 0.45 M instructions in 200 steps. Numbers lost to a race of two threads interning
 * one chain are never reused; past the array's end a chain's id is its slot's address. */
static const ct_chain_slot *ct_chain_ids[CT_CHAIN_IDS];
static atomic_uint ct_chain_count;

struct ct_chain_chunk {
    ct_chain_chunk *next;
    void *allocated;                  /* what calloc returned (ct_chain_zalloc) */
    ct_chain_seen seen[CT_CHAIN_CHUNK];
};
CT_HIDDEN const void *const ct_chain_none = NULL;
static atomic_ullong ct_unwinds, ct_chains_lost;

/* Per thread: the chains met (ct_chain_cache, ct_profrun_impl.h); a known chain is found by its
 * hint inline in the call path (ct_profchain_fast), else in its set's list here. */
/* (ct_chain_mine: the thread's hot line, ct_profrun_me) */
static _Atomic(ct_chain_cache *) ct_chain_caches;

/* ---- the unwind -------------------------------------------------------------------------- */

/* A chain's frames as the unwind found them: where each return address is, and its value. */
typedef struct ct_frames {
    int frames;
    const void *const *at[CT_CHAIN_DEPTH - 1];
    const void *ra[CT_CHAIN_DEPTH - 1];
} ct_frames;

typedef struct ct_walk {
    const void *site;
    int found;                 /* the site's frame reached */
    ct_frames *seen;
} ct_walk;

/* One frame as an unwind reports it (libgcc's or profwalk.c's); nonzero: the chain is complete. */
static int ct_walk_take(void *arg, const void *ip, uintptr_t cfa)
{
    ct_walk *w = arg;
    if (!w->found) {
        /* libcolltune's own frames and the MPI_* wrapper's until the application's caller */
        w->found = ip == w->site;
        return 0;
    }
    ct_frames *s = w->seen;
#if defined(__x86_64__)
    /* an unwind pairs a return address with the CFA of the frame it returns from */
    const void *const *slot = (const void *const *)(cfa - sizeof(void *));
    /* the unwinder's frame and the stack agree, or the chain ends here (unusual frames) */
    if (ip == NULL || cfa == 0 || *slot != ip)
        return 1;
    s->at[s->frames] = slot;
    s->ra[s->frames++] = ip;
    return s->frames == CT_CHAIN_DEPTH - 1;   /* (the frame above is not needed: not unwound) */
#else
    (void)s;
    (void)cfa;
    return 1;
#endif
}

static _Unwind_Reason_Code ct_walk_frame(struct _Unwind_Context *ctx, void *arg)
{
    return ct_walk_take(arg, (const void *)_Unwind_GetIP(ctx), (uintptr_t)_Unwind_GetCFA(ctx))
               ? _URC_END_OF_STACK
               : _URC_NO_REASON;
}

/* The chain above `site` into *s: walked with the kept frame rules, else unwound by libgcc
 * (COLLTUNE_PROFILE_RUN_UNWIND_CHECK: a walked chain is unwound too, and compared). */
static int ct_unwind_check = -1;   /* -1: not read yet */
static atomic_ullong ct_walks, ct_walks_checked, ct_walks_differ;

static void ct_chain_frames(const void *site, ct_frames *s)
{
    s->frames = 0;
    ct_walk w = {site, 0, s};
    if (ct_profwalk(ct_walk_take, &w)) {
        atomic_fetch_add_explicit(&ct_walks, 1, memory_order_relaxed);
        if (CT_UNLIKELY(ct_unwind_check < 0)) {
            int on = 0;
            ct_env_bool(CT_ENV_PROFILE_RUN_UNWIND_CHECK, 0, &on);
            ct_unwind_check = on;
        }
        if (!ct_unwind_check)
            return;
        ct_frames full;
        full.frames = 0;
        ct_walk v = {site, 0, &full};
        _Unwind_Backtrace(ct_walk_frame, &v);
        int same = full.frames == s->frames && v.found == w.found;
        for (int i = 0; same && i < s->frames; i++)
            same = full.ra[i] == s->ra[i] && full.at[i] == s->at[i];
        atomic_fetch_add_explicit(&ct_walks_checked, 1, memory_order_relaxed);
        if (!same)
            atomic_fetch_add_explicit(&ct_walks_differ, 1, memory_order_relaxed);
        return;
    }
    s->frames = 0;
    w.found = 0;
    _Unwind_Backtrace(ct_walk_frame, &w);
}

/* An interned chain's id, numbered at its first intern (the thread whose number is stored wins;
 * a loser's number stays empty). */
static const void *ct_chain_id(ct_chain_slot *slot)
{
    const void *id = atomic_load_explicit(&slot->id, memory_order_acquire);
    if (id != NULL)
        return id;
    unsigned n = atomic_fetch_add_explicit(&ct_chain_count, 1, memory_order_relaxed);
    const void *mine = (const void *)slot;
    if (n < CT_CHAIN_IDS) {
        ct_chain_ids[n] = slot;
        mine = &ct_chain_ids[n];
    }
    if (atomic_compare_exchange_strong_explicit(&slot->id, &id, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    return id;   /* another thread's, stored first */
}

/* The chain's id (ct_chain_id); the site itself when the table is full. */
static const void *ct_chain_intern(const void *site, const ct_frames *s)
{
    ct_chain_key key;
    memset(&key, 0, sizeof key);
    key.ra[0] = site;
    for (int i = 0; i < s->frames; i++)
        key.ra[i + 1] = s->ra[i];
    uint64_t h = (uint64_t)(uintptr_t)site * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < s->frames; i++)
        h = (h ^ (uint64_t)(uintptr_t)s->ra[i]) * 0x100000001B3ull;
    h ^= h >> 29;
    ct_chain_slot *slot = ct_table_probe(ct_chains, &ct_chain_table, CT_CHAIN_SLOTS, sizeof *ct_chains,
                                         h, offsetof(ct_chain_slot, key), &key, sizeof key);
    if (slot == NULL) {
        atomic_fetch_add_explicit(&ct_chains_lost, 1, memory_order_relaxed);
        return site;
    }
    return ct_chain_id(slot);
}

/* Zeroed memory aligned to a cache line (calloc's 16 bytes would let a chain entry or a hint
 * row straddle one more line than it fills), *raw what to free. From calloc, not aligned_alloc
 * and a memset: the cache's ~290 KB are fresh zero pages, touched only where used (a memset
 * faulted in every page at the thread's first call). */
static void *ct_chain_zalloc(size_t size, void **raw)
{
    *raw = calloc(1, size + 64);
    return *raw != NULL ? (void *)(((uintptr_t)*raw + 63) & ~(uintptr_t)63) : NULL;
}

static ct_chain_cache *ct_chain_cache_new(void)
{
    void *raw;
    ct_chain_cache *c = ct_chain_zalloc(sizeof *c, &raw);
    if (c == NULL)
        return NULL;
    c->allocated = raw;
    c->list = atomic_load_explicit(&ct_chain_caches, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&ct_chain_caches, &c->list, c,
                                                  memory_order_release, memory_order_relaxed)) {
    }
    return ct_chain_mine = c;
}

/* A new entry of this thread's (NULL: at the cap, or no memory). */
static ct_chain_seen *ct_chain_entry_new(ct_chain_cache *c)
{
    if (c->entries >= CT_CHAIN_SEEN_MAX)
        return NULL;
    unsigned i = c->entries % CT_CHAIN_CHUNK;
    if (i == 0) {
        void *raw;
        ct_chain_chunk *chunk = ct_chain_zalloc(sizeof *chunk, &raw);
        if (chunk == NULL)
            return NULL;
        chunk->allocated = raw;
        chunk->next = c->chunks;
        c->chunks = chunk;
    }
    c->entries++;
    return &c->chunks->seen[i];
}

static inline unsigned ct_chain_set_of(const void *site, const void *anchor)
{
    return (unsigned)(((uintptr_t)site >> 2) ^ ((uintptr_t)anchor >> 4)) & (CT_CHAIN_SETS - 1);
}

static inline ct_chain_seen **ct_chain_hint(ct_chain_cache *c, const void *above,
                                            const void *site, const void *anchor)
{
    uint64_t h = ((uint64_t)(uintptr_t)above ^ ((uint64_t)(uintptr_t)site << 1)
                  ^ ((uint64_t)(uintptr_t)anchor >> 4)) * 0x9E3779B97F4A7C15ull;
    return &c->hint[h >> (64 - __builtin_ctz(CT_CHAIN_HINTS))];
}

/* The first hint's entry: four per previous chain, by its id (`id >> 3`, dense: two previous
 * chains never share one) and the site's two low bits, so that a loop's calls never evict each
 * other's hint however many chains it has (a hash of (previous chain, site, anchor) put 1,200
 * chains in 4,096 entries: a quarter of the calls missed and walked a set's list of 300 chains,
 * ~2,100 instructions a call on advise_many_chains). The anchor is compared, not hashed. */
static inline ct_chain_seen **ct_chain_after(ct_chain_cache *c, const void *site)
{
    const ct_chain_seen *last = ct_profrun_me.last;
    uintptr_t id = last != NULL ? (uintptr_t)last->id : 0;
    return &c->after[((id >> 1) | ((uintptr_t)site & 3)) & (CT_CHAIN_AFTER - 1)];
}

/* The call at (site, anchor) is entry `s`: the first hint (after the previous call's chain)
 * holds it, and so does the second where `lead` (the set's lead, made this site and anchor's)
 * is given; it follows the previous call's entry, and is the previous one for the next lookup
 * (whose first try is its follower). */
static const void *ct_chain_hit(ct_chain_cache *c, ct_chain_lead *lead, ct_chain_seen *s)
{
    *ct_chain_after(c, s->site) = s;
    if (lead != NULL) {
        if (lead->site != s->site || lead->anchor != s->anchor)
            *lead = (ct_chain_lead){s->site, s->anchor,
                                    s->frames > 0 ? (const void *const *)((const char *)s->anchor
                                                                          + s->off[0])
                                                  : &ct_chain_none};
        *ct_chain_hint(c, *lead->above, s->site, s->anchor) = s;
    }
    if (ct_profrun_me.last != NULL)
        ct_profrun_me.last->follow = s;
    ct_profrun_me.last = s;
    ct_profrun_me.guess = s->follow;
    return s->id;
}

/* An entry's slots as offsets from its anchor and the hash of their return addresses (0: the
 * walk's frames do not fit in 16 bits, farther than 32 KB from the anchor; then the entry is not
 * kept and the chain is unwound at each call). The unused frames repeat the last one; a chain
 * that ends at its site reads the anchor's own word (ct_profchain_is). */
static int ct_chain_fill(ct_chain_seen *s, const void *site, const void *anchor,
                         const ct_frames *f)
{
    s->site = site;
    s->anchor = anchor;
    s->frames = (int16_t)f->frames;
    uint64_t h = 0;
    for (int i = 0; i < CT_CHAIN_DEPTH - 1; i++) {
        int k = i < f->frames ? i : f->frames - 1;
        if (k < 0) {
            s->off[i] = 0;
            continue;
        }
        intptr_t off = (const char *)f->at[k] - (const char *)anchor;
        if (off != (int16_t)off)
            return 0;
        s->off[i] = (int16_t)off;
        h = ct_chain_mix(h, (uint64_t)(uintptr_t)f->ra[k]);
    }
    s->hash = h;
    return 1;
}

static __attribute__((noinline)) const void *ct_chain_unwind(const void *site, const void *anchor,
                                                              unsigned set)
{
    ct_chain_cache *c = ct_chain_mine != NULL ? ct_chain_mine : ct_chain_cache_new();
    uint64_t t = ct_profrun_ticks();   /* a few microseconds: the budget counts each one */
    ct_frames f;
    ct_chain_frames(site, &f);
    atomic_fetch_add_explicit(&ct_unwinds, 1, memory_order_relaxed);
    const void *id = ct_chain_intern(site, &f);
    ct_chain_seen *s = c != NULL ? ct_chain_entry_new(c) : NULL;
    if (s != NULL && ct_chain_fill(s, site, anchor, &f)) {
        s->id = id;
        s->follow = NULL;
        s->next = c->sets[set];
        c->sets[set] = s;
        ct_chain_hit(c, &c->lead[set], s);
    } else {
        if (s != NULL)   /* (never met: its slot is taken, not listed) */
            s->id = NULL;
        ct_profrun_me.last = NULL;   /* (an entry not kept is nobody's follower) */
        ct_profrun_me.guess = NULL;
    }
    ct_own_add(ct_profrun_ticks() - t, 1);
    return id;
}

/* Neither hint: the set's list (the entry found moved to its front: a loop's chains are found
 * after few compares), else an unwind. */
static __attribute__((noinline)) const void *ct_chain_find(ct_chain_cache *c, unsigned set,
                                                           const void *site, const void *anchor)
{
    ct_chain_seen **link = &c->sets[set];
    for (ct_chain_seen *s = *link; s != NULL; link = &s->next, s = s->next)
        if (ct_profchain_is(s, site, anchor)) {
            *link = s->next;
            s->next = c->sets[set];
            c->sets[set] = s;
            return ct_chain_hit(c, &c->lead[set], s);
        }
    return ct_chain_unwind(site, anchor, set);
}

/* Not the previous entry's follower (ct_profchain_fast): the first hint, the second (by the
 * frame above the site, where the set's lead has it), then the list. */
CT_HOT_TEXT const void *ct_profchain_shared(const void *site, const void *anchor)
{
    return ct_profchain_fast(site, anchor);
}

const void *ct_profchain_site(const void *site, const void *anchor)
{
    unsigned set = ct_chain_set_of(site, anchor);
    ct_chain_cache *c = ct_chain_mine;
    if (CT_UNLIKELY(c == NULL))
        return ct_chain_unwind(site, anchor, set);
    ct_chain_seen *after = *ct_chain_after(c, site);
    if (CT_LIKELY(after != NULL && ct_profchain_is(after, site, anchor)))
        return ct_chain_hit(c, NULL, after);
    const ct_chain_lead *lead = &c->lead[set];
    if (CT_LIKELY(lead->site == site && lead->anchor == anchor)) {
        ct_chain_seen *hint = *ct_chain_hint(c, *lead->above, site, anchor);
        if (CT_LIKELY(hint != NULL && ct_profchain_is(hint, site, anchor)))
            return ct_chain_hit(c, NULL, hint);
    }
    return ct_chain_find(c, set, site, anchor);
}

/* ---- MPI_Finalize -------------------------------------------------------------------------- */

int ct_profchain_ids(void)
{
    unsigned n = atomic_load(&ct_chain_count);
    return atomic_load(&ct_chains_lost) != 0 || n > CT_CHAIN_IDS ? -1 : (int)n;
}

const void *ct_profchain_id(int n)
{
    return &ct_chain_ids[n];
}

static void ct_chain_line(FILE *out, const ct_chain_slot *s)
{
    const void *id = atomic_load(&s->id);
    if (atomic_load(&s->state) != 2 || id == NULL)
        return;
    fprintf(out, "chain %p", id);
    for (int k = 0; k < CT_CHAIN_DEPTH && s->key.ra[k] != NULL; k++)
        fprintf(out, " %p", s->key.ra[k]);
    fputc('\n', out);
}

/* The chain lines, in the order the chains were interned (the table's claimed entries only:
 * reading every slot of a sparse table faulted in its ~80 untouched pages at each MPI_Finalize).
 * An entry whose id lost a race to another thread's is written for the id it holds. */
static void ct_chain_lines(FILE *out)
{
    size_t used = ct_table_used(&ct_chain_table);
    for (size_t i = 0; i < used; i++)
        ct_chain_line(out, &ct_chains[i]);
}

void ct_profchain_write(FILE *out)
{
    ct_chain_lines(out);
    fprintf(out, "chains_made %llu %llu\n", (unsigned long long)atomic_load(&ct_unwinds),
            (unsigned long long)atomic_load(&ct_chains_lost));
    fprintf(out, "chain_walks %llu %llu %llu\n", (unsigned long long)atomic_load(&ct_walks),
            (unsigned long long)atomic_load(&ct_walks_checked),
            (unsigned long long)atomic_load(&ct_walks_differ));
}

/* After ct_profrun_on is cleared: no call reaches a cache any more (as the memo blocks). */
void ct_profchain_finish(void)
{
    ct_chain_cache *c = atomic_exchange(&ct_chain_caches, NULL);
    while (c != NULL) {
        ct_chain_cache *next = c->list;
        while (c->chunks != NULL) {
            ct_chain_chunk *chunk = c->chunks;
            c->chunks = chunk->next;
            free(chunk->allocated);
        }
        free(c->allocated);
        c = next;
    }
    ct_chain_mine = NULL;
    ct_profrun_me.last = NULL;
    ct_profrun_me.guess = NULL;
}

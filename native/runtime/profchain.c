/*
 * Profiling mode: a call's site is its chain of return addresses, so that a call made through
 * the application's own communication layer (a `reduce()` template, PETSc's MPIU_Allreduce, a
 * `comm.sum()` helper) is told apart by the application line that called the layer. The front
 * end cuts each chain where the application's own code starts (advise/callsites.py).
 *
 * A chain is the return address into the caller of MPI_* (the site the wrappers take) and up to
 * CT_CHAIN_DEPTH - 1 return addresses above it, interned in a fixed table; the address of its
 * slot is the call's site for everything else (points, memo, patterns), and MPI_Finalize writes
 * each chain's addresses (`chain` lines).
 *
 * Only a new chain costs an unwind (profwalk.c's walk by the frames' kept rules, ~1,000
 * instructions once the rules are known; libgcc's _Unwind_Backtrace, ~28,000, where a frame's rule
 * is not one the walk takes). Each
 * thread remembers the chains it saw last by (site, anchor): the anchor is an address in the
 * wrapper's own frame, so the same anchor means the same stack depth at the call, and then the
 * return address of each frame of a known chain sits at the same stack slot as when it was
 * unwound. A call reads those slots (one load per frame) and compares them with the chain's
 * addresses: all equal, it is that chain; else the next remembered one, else an unwind. All the
 * chain's slots are read (ct_profchain_is): a frame's position depends only on the frames below
 * it, so past a differing frame a slot may hold anything, and the answer is "not this chain"
 * all the same; every slot is in this thread's stack above the wrapper's frame. The slot of a
 * return address is the CFA of the frame it returns from, less 8, on x86-64 (the call pushed it
 * there); elsewhere a chain is its site alone.
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
/* Chains pushed out of a full set (per set, grown by doubling; the oldest overwritten beyond):
 * a recursive code reaches one MPI call with one stack depth through many callers above it
 * (ExaML: 60 chains at one site), and a set of 4 ways evicted them in turn, an unwind per 5.7
 * calls (16,875 unwinds for 167 chains, 3% of its instructions). */
#define CT_CHAIN_SPILL_MAX 256
_Static_assert((CT_CHAIN_SLOTS & (CT_CHAIN_SLOTS - 1)) == 0, "a power of two (ct_table_probe)");

typedef struct ct_chain_key {
    const void *ra[CT_CHAIN_DEPTH];   /* [0]: the site; zeros after the chain's end */
} ct_chain_key;

typedef struct ct_chain_slot {
    atomic_int state;                 /* 0 empty, 1 being claimed, 2 ready (ct_table_probe) */
    ct_chain_key key;
} ct_chain_slot;

static ct_chain_slot ct_chains[CT_CHAIN_SLOTS];

struct ct_chain_spill {
    unsigned used, size, next;                /* next: the entry overwritten when full */
    ct_chain_seen seen[];
};
CT_HIDDEN const void *const ct_chain_none = NULL;
static atomic_ullong ct_unwinds, ct_chains_lost;

/* A set holds the chains of its (site, anchor) pairs: at one site and stack depth the chains
 * that differ in the frame above the site (OpenFOAM: one Foam::reduce site reached from 35
 * callers, most of them telling apart at that frame) were found by comparing way after way, ~100
 * instructions a call. So each thread also remembers, by (site, anchor, that frame's return
 * address), the way that matched last: the frame is read where the set's first chain of that
 * site and anchor has it (the same slot for every chain there: the site's function's frame),
 * and the remembered way is compared whole (a hint: a way reused since, or a frame read from a
 * slot that moved, only makes it miss). */
CT_HIDDEN _Thread_local ct_chain_cache *ct_chain_mine CT_TLS_MODEL;
static _Atomic(ct_chain_cache *) ct_chain_caches;

/* ---- the unwind -------------------------------------------------------------------------- */

typedef struct ct_walk {
    const void *site;
    int found;                 /* the site's frame reached */
    ct_chain_seen *seen;
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
    ct_chain_seen *s = w->seen;
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

static void ct_chain_frames(const void *site, ct_chain_seen *s)
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
        ct_chain_seen full;
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

/* The chain's interned slot; the site itself when the table is full. */
static const void *ct_chain_intern(const void *site, const ct_chain_seen *s)
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
    ct_chain_slot *slot = ct_table_probe(ct_chains, CT_CHAIN_SLOTS, sizeof *ct_chains, h,
                                         offsetof(ct_chain_slot, key), &key, sizeof key);
    if (slot == NULL) {
        atomic_fetch_add_explicit(&ct_chains_lost, 1, memory_order_relaxed);
        return site;
    }
    return slot;
}

static ct_chain_cache *ct_chain_cache_new(void)
{
    ct_chain_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->list = atomic_load_explicit(&ct_chain_caches, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&ct_chain_caches, &c->list, c,
                                                  memory_order_release, memory_order_relaxed)) {
    }
    return ct_chain_mine = c;
}

/* A way's chain kept in its set's spill before the way is reused (dropped where no memory). */
static void ct_chain_spill_keep(ct_chain_cache *c, unsigned set, const ct_chain_seen *s)
{
    ct_chain_spill *sp = c->spill[set];
    if (s->id == NULL)
        return;
    if (sp == NULL || (sp->used == sp->size && sp->size < CT_CHAIN_SPILL_MAX)) {
        unsigned size = sp == NULL ? 8 : 2 * sp->size;
        ct_chain_spill *grown = realloc(sp, sizeof *sp + size * sizeof sp->seen[0]);
        if (grown == NULL)
            return;
        if (sp == NULL)
            grown->used = grown->next = 0;
        grown->size = size;
        c->spill[set] = sp = grown;
    }
    if (sp->used < sp->size) {
        sp->seen[sp->used++] = *s;
    } else {
        sp->seen[sp->next] = *s;
        sp->next = (sp->next + 1) % sp->size;
    }
}

/* Not in the set's ways: in its spill (swapped into the way replaced next, so that a loop's
 * chains come back to the ways), else NULL. */
static const void *ct_chain_from_spill(ct_chain_cache *c, unsigned set, const void *site,
                                       const void *anchor)
{
    ct_chain_spill *sp = c->spill[set];
    if (sp == NULL)
        return NULL;
    for (unsigned i = 0; i < sp->used; i++)
        if (ct_profchain_is(&sp->seen[i], site, anchor)) {
            ct_chain_seen *way = &c->sets[set][c->next[set]];
            ct_chain_seen found = sp->seen[i];
            sp->seen[i] = *way;   /* an empty way leaves an entry that never matches (id NULL) */
            *way = found;
            c->next[set] = (unsigned char)((c->next[set] + 1) % CT_CHAIN_WAYS);
            return found.id;
        }
    return NULL;
}

static __attribute__((noinline)) const void *ct_chain_unwind(const void *site, const void *anchor,
                                                              unsigned set)
{
    ct_chain_cache *c = ct_chain_mine != NULL ? ct_chain_mine : ct_chain_cache_new();
    ct_chain_seen scratch, *s = &scratch;
    if (c != NULL) {
        const void *id = ct_chain_from_spill(c, set, site, anchor);
        if (id != NULL)
            return id;
        s = &c->sets[set][c->next[set]];
        ct_chain_spill_keep(c, set, s);
        c->next[set] = (unsigned char)((c->next[set] + 1) % CT_CHAIN_WAYS);
    }
    uint64_t t = ct_profrun_ticks();   /* a few microseconds: the budget counts each one */
    s->id = NULL;
    ct_chain_frames(site, s);
    for (int i = s->frames; i < CT_CHAIN_DEPTH - 1; i++) {   /* (ct_profchain_is reads them) */
        s->at[i] = &ct_chain_none;
        s->ra[i] = NULL;
    }
    atomic_fetch_add_explicit(&ct_unwinds, 1, memory_order_relaxed);
    s->site = site;
    s->anchor = anchor;
    s->id = ct_chain_intern(site, s);
    ct_own_add(ct_profrun_ticks() - t, 1);
    return s->id;
}

/* Not the set's lead's hint (`tried`: the hint tried already, NULL: the lead was another
 * site's): the ways (the lead and its hint made from the one found; a hint tried is not tried
 * again: ExaML's recursion reaches one site at one depth through chains that differ high up,
 * whose hint misses), else an unwind. */
static __attribute__((noinline)) const void *ct_chain_find(ct_chain_cache *c, unsigned set,
                                                           const void *site, const void *anchor,
                                                           ct_chain_seen **tried)
{
    ct_chain_seen *ways = c->sets[set], **hint = tried;
    for (int way = 0; way < CT_CHAIN_WAYS && hint == NULL; way++)
        if (ways[way].site == site && ways[way].anchor == anchor && ways[way].id != NULL) {
            c->lead[set] = (ct_chain_lead){site, anchor, ways[way].at[0]};
            hint = ct_chain_hint(c, *ways[way].at[0], site, anchor);
            if (*hint != NULL && ct_profchain_is(*hint, site, anchor))
                return (*hint)->id;
            break;
        }
    for (int way = 0; way < CT_CHAIN_WAYS; way++)
        if (ct_profchain_is(&ways[way], site, anchor)) {
            if (hint != NULL)
                *hint = &ways[way];
            return ways[way].id;
        }
    return ct_chain_unwind(site, anchor, set);
}

const void *ct_profchain_site(const void *site, const void *anchor)
{
    unsigned set = ct_chain_set_of(site, anchor);
    ct_chain_cache *c = ct_chain_mine;
    if (CT_UNLIKELY(c == NULL))
        return ct_chain_unwind(site, anchor, set);
    const ct_chain_lead *lead = &c->lead[set];
    ct_chain_seen **hint = NULL;
    if (CT_LIKELY(lead->site == site && lead->anchor == anchor)) {
        hint = ct_chain_hint(c, *lead->above, site, anchor);
        if (CT_LIKELY(*hint != NULL && ct_profchain_is(*hint, site, anchor)))
            return (*hint)->id;
    }
    return ct_chain_find(c, set, site, anchor, hint);
}

/* ---- MPI_Finalize -------------------------------------------------------------------------- */

void ct_profchain_write(FILE *out)
{
    for (size_t i = 0; i < CT_CHAIN_SLOTS; i++) {
        const ct_chain_slot *s = &ct_chains[i];
        if (atomic_load(&s->state) != 2)
            continue;
        fprintf(out, "chain %p", (const void *)s);
        for (int k = 0; k < CT_CHAIN_DEPTH && s->key.ra[k] != NULL; k++)
            fprintf(out, " %p", s->key.ra[k]);
        fputc('\n', out);
    }
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
        for (unsigned set = 0; set < CT_CHAIN_SETS; set++)
            free(c->spill[set]);
        free(c);
        c = next;
    }
    ct_chain_mine = NULL;
}

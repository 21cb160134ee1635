/*
 * Tuning profiles (docs/profile.md): what a parsed profile says. Content hash and lookup; the
 * parser is profile.c. Pure C11 and no MPI calls, like the parser: the fuzz harness and the unit
 * test link both with the generated catalog only.
 *
 * Lookup is allocation-free and O(log blocks + log ranges): it runs in every intercepted call
 * that the profile mode decides.
 */
#include <stdio.h>
#include <string.h>

#include "ct_profile_impl.h"
#include "ct_text.h"

static const char *ct_coll_name(int coll)
{
    const char *name = colltune_collective_name(coll);
    return name != NULL ? name : "?";
}

/* One canonical line per rule: "COLL PLO PHI BLO BHI VARIANT\n", and for a layout block the
 * layout after the variant, "... VARIANT NODESxPPN\n" (docs/profile.md, "Content hash"). */
static uint64_t ct_hash_block(uint64_t h, const struct ct_profile *p, int coll, const ct_pblock *b)
{
    char line[256];
    for (uint32_t ri = b->first; ri < b->first + b->count; ri++) {
        const ct_prange *r = &p->ranges[ri];
        const char *vname = colltune_variant_name(r->variant);
        int n = b->nodes > 0
                    ? snprintf(line, sizeof line, "%s %d %d %lld %lld %s %dx%d\n", ct_coll_name(coll),
                               b->lo, b->hi, (long long)r->lo, (long long)r->hi,
                               vname != NULL ? vname : "?", b->nodes, b->ppn)
                    : snprintf(line, sizeof line, "%s %d %d %lld %lld %s\n", ct_coll_name(coll),
                               b->lo, b->hi, (long long)r->lo, (long long)r->hi,
                               vname != NULL ? vname : "?");
        if (n > 0)
            h = ct_text_fnv1a(h, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    return h;
}

/* FNV-1a 64 over the canonical lines, collectives in strcmp order of their names so that the
 * hash does not depend on the generated enum's order; blocks in file order (layout-free first). */
uint64_t ct_profile_content_hash(const struct ct_profile *p)
{
    int order[CT_NUM_COLLECTIVES];
    for (int i = 0; i < CT_NUM_COLLECTIVES; i++) {
        int j = i;
        while (j > 0 && strcmp(ct_coll_name(order[j - 1]), ct_coll_name(i)) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    uint64_t h = CT_TEXT_FNV_BASIS;
    for (int k = 0; k < CT_NUM_COLLECTIVES; k++) {
        const ct_pcoll *c = &p->colls[order[k]];
        for (uint32_t bi = c->first; bi < c->first + c->count; bi++)
            h = ct_hash_block(h, p, order[k], &p->blocks[bi]);
    }
    return h;
}

uint64_t ct_profile_hash(const ct_profile *profile)
{
    return profile != NULL ? profile->hash : 0;
}

size_t ct_profile_rule_count(const ct_profile *profile)
{
    return profile != NULL ? profile->nranges : 0;
}

int ct_profile_has_layouts(const ct_profile *profile, int coll)
{
    if (profile == NULL || coll >= CT_NUM_COLLECTIVES)
        return 0;
    if (coll >= 0)
        return profile->colls[coll].count > profile->colls[coll].nfree;
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++)
        if (profile->colls[c].count > profile->colls[c].nfree)
            return 1;
    return 0;
}

/* Branch-free binary searches (the comparison becomes a conditional move): random message sizes
 * would otherwise mispredict about every second step. Both return the last element whose lower
 * bound is <= the key, or the first element when there is none; the caller checks the bounds. */
static const ct_pblock *ct_find_block(const ct_pblock *base, uint32_t n, int comm_size)
{
    while (n > 1) {
        uint32_t half = n / 2u;
        base = base[half].lo <= comm_size ? base + half : base;
        n -= half;
    }
    return base;
}

static const ct_prange *ct_find_range(const ct_prange *base, uint32_t n, int64_t bytes)
{
    while (n > 1) {
        uint32_t half = n / 2u;
        base = base[half].lo <= bytes ? base + half : base;
        n -= half;
    }
    return base;
}

static uint64_t ct_layout_key(int nodes, int ppn)
{
    return (uint64_t)(uint32_t)nodes << 32 | (uint32_t)ppn;
}

/* The layout block of exactly (nodes, ppn) among n blocks sorted by that key, or NULL. */
static const ct_pblock *ct_find_layout(const ct_pblock *base, uint32_t n, int nodes, int ppn)
{
    uint64_t key = ct_layout_key(nodes, ppn);
    while (n > 1) {
        uint32_t half = n / 2u;
        base = ct_layout_key(base[half].nodes, base[half].ppn) <= key ? base + half : base;
        n -= half;
    }
    return ct_layout_key(base->nodes, base->ppn) == key ? base : NULL;
}

int ct_profile_lookup_layout(const ct_profile *profile, int coll, int comm_size, int nodes,
                             int ppn, int64_t bytes)
{
    if (profile == NULL || coll < 0 || coll >= CT_NUM_COLLECTIVES || bytes < 0)
        return -1;
    const ct_pcoll *c = &profile->colls[coll];
    const ct_pblock *b = NULL;
    /* An exact layout match decides alone: its sizes without a rule use the library, even where
     * a layout-free block has one (docs/profile.md, "Layouts"). */
    if (c->count > c->nfree && nodes > 0 && ppn > 0 && (int64_t)nodes * ppn == comm_size)
        b = ct_find_layout(profile->blocks + c->first + c->nfree, c->count - c->nfree, nodes, ppn);
    if (b == NULL) {
        if (c->nfree == 0)
            return -1;
        b = ct_find_block(profile->blocks + c->first, c->nfree, comm_size);
        if (comm_size < b->lo || comm_size > b->hi)
            return -1;
    }
    /* Every block has at least one rule (the parser refuses empty blocks). */
    const ct_prange *r = ct_find_range(profile->ranges + b->first, b->count, bytes);
    return bytes >= r->lo && bytes <= r->hi ? r->variant : -1;
}

int ct_profile_lookup(const ct_profile *profile, int coll, int comm_size, int64_t bytes)
{
    return ct_profile_lookup_layout(profile, coll, comm_size, 0, 0, bytes);
}

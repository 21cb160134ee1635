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

const char *ct_profile_form_suffix(int section)
{
    static const char *const suffix[CT_PROFILE_FORMS] = {"", "#nonblocking", "#persistent"};
    int form = section / CT_NUM_COLLECTIVES;
    return form >= 0 && form < CT_PROFILE_FORMS ? suffix[form] : "?";
}

/* A section's name, "allreduce" or "allreduce#nonblocking", into out[96]. */
static const char *ct_section_label(char out[96], int section)
{
    snprintf(out, 96, "%s%s", ct_coll_name(section % CT_NUM_COLLECTIVES),
             ct_profile_form_suffix(section));
    return out;
}

/* A rule's member name: a blocking section's variant, a started form's library algorithm. */
static const char *ct_rule_member(const struct ct_profile *p, int section, int variant)
{
    if (section >= CT_NUM_COLLECTIVES)
        return variant >= 0 && (uint32_t)variant < p->nnames ? p->names[variant] : "?";
    const char *vname = colltune_variant_name(variant);
    return vname != NULL ? vname : "?";
}

/* One canonical line per rule: "COLL PLO PHI BLO BHI VARIANT\n", and for a layout block the
 * layout after the variant, "... VARIANT NODESxPPN\n"; a started form's COLL carries its suffix
 * ("allreduce#nonblocking ...") and VARIANT is the algorithm's name (docs/profile.md, "Content
 * hash"). */
static uint64_t ct_hash_block(uint64_t h, const struct ct_profile *p, int section, const ct_pblock *b)
{
    char line[512], label[96];
    ct_section_label(label, section);
    for (uint32_t ri = b->first; ri < b->first + b->count; ri++) {
        const ct_prange *r = &p->ranges[ri];
        const char *vname = ct_rule_member(p, section, r->variant);
        int n = b->nodes > 0
                    ? snprintf(line, sizeof line, "%s %d %d %lld %lld %s %dx%d\n", label,
                               b->lo, b->hi, (long long)r->lo, (long long)r->hi, vname, b->nodes,
                               b->ppn)
                    : snprintf(line, sizeof line, "%s %d %d %lld %lld %s\n", label,
                               b->lo, b->hi, (long long)r->lo, (long long)r->hi, vname);
        if (n > 0)
            h = ct_text_fnv1a(h, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    return h;
}

/* FNV-1a 64 over the canonical lines, sections in strcmp order of their names so that the hash
 * does not depend on the generated enum's order; blocks in file order (layout-free first). */
uint64_t ct_profile_content_hash(const struct ct_profile *p)
{
    int order[CT_PROFILE_SECTIONS];
    char a[96], b[96];
    for (int i = 0; i < CT_PROFILE_SECTIONS; i++) {
        int j = i;
        ct_section_label(b, i);
        while (j > 0 && strcmp(ct_section_label(a, order[j - 1]), b) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    uint64_t h = CT_TEXT_FNV_BASIS;
    for (int k = 0; k < CT_PROFILE_SECTIONS; k++) {
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

int ct_profile_resolve(ct_profile *profile, int (*find)(const char *name))
{
    int missing = 0;
    for (uint32_t i = 0; profile != NULL && i < profile->nnames; i++) {
        profile->ids[i] = find != NULL ? find(profile->names[i]) : -1;
        missing += profile->ids[i] < 0;
    }
    return missing;
}

size_t ct_profile_name_count(const ct_profile *profile)
{
    return profile != NULL ? profile->nnames : 0;
}

const char *ct_profile_name(const ct_profile *profile, size_t i)
{
    return profile != NULL && i < profile->nnames ? profile->names[i] : NULL;
}

int ct_profile_has_form(const ct_profile *profile, int form, int coll)
{
    if (profile == NULL || form < 1 || form >= CT_PROFILE_FORMS || coll >= CT_NUM_COLLECTIVES)
        return 0;
    if (coll >= 0)
        return profile->colls[form * CT_NUM_COLLECTIVES + coll].count > 0;
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++)
        if (profile->colls[form * CT_NUM_COLLECTIVES + c].count > 0)
            return 1;
    return 0;
}

int ct_profile_lookup_form(const ct_profile *profile, int form, int coll, int comm_size,
                           int64_t bytes)
{
    if (profile == NULL || form < 1 || form >= CT_PROFILE_FORMS || coll < 0
        || coll >= CT_NUM_COLLECTIVES || bytes < 0)
        return -1;
    const ct_pcoll *c = &profile->colls[form * CT_NUM_COLLECTIVES + coll];
    if (c->nfree == 0)   /* the parser allows no layout blocks here */
        return -1;
    const ct_pblock *b = ct_find_block(profile->blocks + c->first, c->nfree, comm_size);
    if (comm_size < b->lo || comm_size > b->hi)
        return -1;
    const ct_prange *r = ct_find_range(profile->ranges + b->first, b->count, bytes);
    if (bytes < r->lo || bytes > r->hi)
        return -1;
    return (uint32_t)r->variant < profile->nnames ? profile->ids[r->variant] : -1;
}

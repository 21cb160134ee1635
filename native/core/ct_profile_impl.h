/*
 * A parsed tuning profile in memory: what the parser (profile.c) builds and the lookup and hash
 * (profile_rules.c) read. Private to those two files.
 */
#ifndef CT_PROFILE_IMPL_H
#define CT_PROFILE_IMPL_H

#include <stdint.h>

#include "ct_catalog.h"
#include "ct_profile.h"

/* The message-size rules of one block: ranges[first .. first+count). A layout-free block
 * (`procs LO HI`) has nodes == ppn == 0; a layout block (`nodes N ppn P`) has lo == hi == N * P. */
typedef struct ct_pblock {
    int lo, hi;
    int nodes, ppn;
    uint32_t first, count;
} ct_pblock;

/* `variant`: a blocking section's variant index (ct_var_id); a section of another form's index
 * into the profile's member names (its library algorithms, resolved at MPI_Init). */
typedef struct ct_prange {
    int64_t lo, hi;
    int variant;
} ct_prange;

/* The sections a profile may have: one per collective and form (`<coll>`, `<coll>#nonblocking`,
 * `<coll>#persistent`), section s of form s / CT_NUM_COLLECTIVES (enum ct_form's order). */
#define CT_PROFILE_FORMS 3
#define CT_PROFILE_SECTIONS (CT_PROFILE_FORMS * CT_NUM_COLLECTIVES)
#define CT_PROFILE_NAME 96   /* a member name of a started form, with its terminating 0 */

/* The blocks of one collective: blocks[first .. first+count), its `nfree` layout-free blocks
 * first (sorted by communicator size), then its layout blocks (sorted by nodes, then ppn): the
 * grammar asks for that order, so both runs are contiguous and sorted for binary search. */
typedef struct ct_pcoll {
    uint32_t first, count, nfree;
} ct_pcoll;

struct ct_profile {
    ct_pcoll colls[CT_PROFILE_SECTIONS];
    ct_pblock *blocks;
    ct_prange *ranges;
    uint32_t nblocks, nranges;
    /* The library algorithms the started forms' rules name (`lib:<coll>:<alg>#<form>`), each
     * once, and their member ids once resolved (ct_profile_resolve; -1: not offered here). */
    char (*names)[CT_PROFILE_NAME];
    int *ids;
    uint32_t nnames;
    uint64_t hash;
};

/* The suffix of section s's name in profiles and messages ("" for the blocking form). */
const char *ct_profile_form_suffix(int section);

/* FNV-1a 64 of the canonical rules (docs/profile.md, "Content hash"); profile_rules.c. */
uint64_t ct_profile_content_hash(const struct ct_profile *p);

#endif /* CT_PROFILE_IMPL_H */

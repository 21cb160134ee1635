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

typedef struct ct_prange {
    int64_t lo, hi;
    int variant;
} ct_prange;

/* The blocks of one collective: blocks[first .. first+count), its `nfree` layout-free blocks
 * first (sorted by communicator size), then its layout blocks (sorted by nodes, then ppn): the
 * grammar asks for that order, so both runs are contiguous and sorted for binary search. */
typedef struct ct_pcoll {
    uint32_t first, count, nfree;
} ct_pcoll;

struct ct_profile {
    ct_pcoll colls[CT_NUM_COLLECTIVES];
    ct_pblock *blocks;
    ct_prange *ranges;
    uint32_t nblocks, nranges;
    uint64_t hash;
};

/* FNV-1a 64 of the canonical rules (docs/profile.md, "Content hash"); profile_rules.c. */
uint64_t ct_profile_content_hash(const struct ct_profile *p);

#endif /* CT_PROFILE_IMPL_H */

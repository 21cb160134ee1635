/*
 * What the selection-table parser (select.c) and the draw (select_draw.c) share: the parsed
 * table's layout. Private to native/core; everyone else sees ct_select.h.
 */
#ifndef CT_SELECT_IMPL_H
#define CT_SELECT_IMPL_H

#include "ct_catalog.h"
#include "ct_select.h"

enum { CT_UNLISTED_EXPLORE, CT_UNLISTED_LIBRARY, CT_UNLISTED_EXPLOIT };
#define CT_CODE_EXPLORE CT_SELECT_CODE_EXPLORE   /* 0 unlisted, else 1 + exploit member */
_Static_assert(CT_NUM_VARIANTS + 1 < CT_CODE_EXPLORE, "portfolio indices fit a cell code");

/* A listed collective. `code` has nbins[0] * nbins[1] * nbins[2] cells, index
 * (s * nbins[1] + n) * nbins[2] + p. Explore cell i (if any) is the r-th, r = explore[i]: its m
 * prefix sums are at prefix + r * m (table member order), its best portfolio member best[r]. */
typedef struct ct_scoll {
    uint8_t listed, m;
    const uint8_t *code;
    const uint32_t *explore;
    const double *prefix;
    const uint8_t *best;
    const uint8_t *port;     /* table member -> portfolio index */
    void *block;             /* the one allocation behind the pointers above */
    size_t block_bytes;
} ct_scoll;

struct ct_select {
    ct_scoll colls[CT_SELECT_PORTFOLIOS];
    int nbins[3];
    uint32_t cells;          /* cells of a cube */
    double lo, hi;
    int unlisted;
    uint64_t budget;
    uint64_t cell_budget;
    uint64_t hash;
    uint16_t uniform_at[CT_SELECT_PORTFOLIOS];
    double uniform[];        /* prefix sums of unlisted explore, portfolio by portfolio */
};

/* One explore cell while its collective's block is being read. */

/* Prefix sums of the explore probabilities of weights w[0..m), accumulated left to right. */
int ct_select_prefix(const double *w, int m, double lo, double hi, double *out);

/* The portfolio index of the registered library member named s[0..n) of `coll`, or -1; and
 * why the library offers none or which (ct_select_clear_library's note, "" if none). */
int ct_select_library_index(int coll, const char *s, size_t n);
const char *ct_select_library_note(void);

#endif /* CT_SELECT_IMPL_H */

/*
 * The rank-consistent draw of selection tables (docs/select.md): explore probabilities, the
 * portfolio (default, mock-ups, the library's own algorithms), bins, picks and redraws.
 * colltune.learn.draw implements the same arithmetic operation for operation, so both sides pick
 * the same member for the same call. Pure C11, no MPI calls.
 */
#include <stdio.h>
#include <string.h>

#include "ct_select_impl.h"

/* ---- the draw ------------------------------------------------------------------------------ */

int ct_select_probabilities(const double *w, int m, double lo, double hi, double *p)
{
    double total = 0.0;
    for (int i = 0; i < m; i++)
        total += w[i];
    if (!(total > 0.0))
        return -1;
    double clamped = 0.0;
    for (int i = 0; i < m; i++) {
        double x = w[i] / total;
        p[i] = x < lo ? lo : x;
        p[i] = p[i] > hi ? hi : p[i];
        clamped += p[i];
    }
    for (int i = 0; i < m; i++)
        p[i] = p[i] / clamped;
    return 0;
}

int ct_select_prefix(const double *w, int m, double lo, double hi, double *out)
{
    if (ct_select_probabilities(w, m, lo, hi, out) != 0)
        return -1;
    double acc = 0.0;
    for (int i = 0; i < m; i++) {
        acc += out[i];
        out[i] = acc;
    }
    return 0;
}

static int ct_scan(const double *prefix, int m, double u)
{
    for (int i = 0; i < m; i++)
        if (u < prefix[i])
            return i;
    return m - 1;
}

int ct_select_pick_explore(const double *w, int m, double lo, double hi, double u)
{
    double prefix[CT_SELECT_MAX_MEMBERS];
    if (m < 1 || m > CT_SELECT_MAX_MEMBERS || ct_select_prefix(w, m, lo, hi, prefix) != 0)
        return -1;
    return ct_scan(prefix, m, u);
}

int ct_select_pick_exploit(const double *w, int m)
{
    int best = 0;
    for (int i = 1; i < m; i++)
        if (w[i] > w[best])
            best = i;
    return best;
}

/* ---- portfolio and bins -------------------------------------------------------------------- */

/* The library's own algorithms the runtime registered (ct_select_add_library), after the
 * mock-ups; written once at MPI_Init before any table is parsed, read-only afterwards. */
static struct {
    char name[CT_SELECT_LIB_NAME];
    int id;
} ct_lib[CT_SELECT_PORTFOLIOS][CT_SELECT_MAX_LIB];
static int ct_nlib[CT_SELECT_PORTFOLIOS];
static char ct_lib_note[256];

/* Mock-ups of portfolio `coll`: the nonblocking portfolios have none. */
static int ct_mockups(int coll)
{
    static int count[CT_SELECT_PORTFOLIOS] = {-1};   /* computed once: the catalog is constant */
    if (count[0] < 0) {
        int n[CT_SELECT_PORTFOLIOS] = {0};
        for (int v = 0; v < CT_NUM_VARIANTS; v++)
            n[colltune_variant_collective(v)]++;
        memcpy(count, n, sizeof n);
    }
    return count[coll];
}

int ct_select_add_library(int coll, const char *name, int id)
{
    if (coll < 0 || coll >= CT_SELECT_PORTFOLIOS || ct_nlib[coll] == CT_SELECT_MAX_LIB
        || 1 + ct_mockups(coll) + ct_nlib[coll] >= CT_SELECT_MAX_MEMBERS
        || strlen(name) >= CT_SELECT_LIB_NAME)
        return -1;
    strcpy(ct_lib[coll][ct_nlib[coll]].name, name);
    ct_lib[coll][ct_nlib[coll]++].id = id;
    return 0;
}

void ct_select_clear_library(const char *note)
{
    memset(ct_nlib, 0, sizeof ct_nlib);
    snprintf(ct_lib_note, sizeof ct_lib_note, "%s", note != NULL ? note : "");
}

int ct_select_library_index(int coll, const char *s, size_t n)
{
    for (int k = 0; k < ct_nlib[coll]; k++)
        if (strlen(ct_lib[coll][k].name) == n && memcmp(ct_lib[coll][k].name, s, n) == 0)
            return 1 + ct_mockups(coll) + k;
    return -1;
}

const char *ct_select_library_note(void)
{
    return ct_lib_note;
}

int ct_select_portfolio_size(int coll)
{
    return 1 + ct_mockups(coll) + ct_nlib[coll];
}

int ct_select_member_variant(int coll, int index)
{
    for (int v = 0; v < CT_NUM_VARIANTS && index > 0; v++)
        if (colltune_variant_collective(v) == coll && --index == 0)
            return v;
    return index > 0 && index <= ct_nlib[coll] ? ct_lib[coll][index - 1].id : -1;
}

const char *ct_select_member_name(int coll, int index)
{
    int m = ct_mockups(coll);
    if (index == 0)
        return "default";
    if (index <= m)
        return colltune_variant_name(ct_select_member_variant(coll, index));
    return index - m <= ct_nlib[coll] ? ct_lib[coll][index - m - 1].name : "?";
}

static int ct_bitlen(uint64_t x)
{
    return x == 0 ? 0 : 64 - __builtin_clzll(x);
}

int ct_select_count_bin(uint64_t value, int nbins)
{
    int b = ct_bitlen(value < 1 ? 1 : value) - 1;
    return b < nbins - 1 ? b : nbins - 1;
}

/* ---- pick ---------------------------------------------------------------------------------- */

uint32_t ct_select_cell(const ct_select *t, const int bins[3])
{
    return (uint32_t)((bins[0] * t->nbins[1] + bins[1]) * t->nbins[2] + bins[2]);
}

const uint8_t *ct_select_codes(const ct_select *t, int coll)
{
    return t->colls[coll].code;
}

int ct_select_pick_cell(const ct_select *t, int coll, uint32_t cell, uint64_t seed,
                        uint64_t comm_id, uint64_t call_index, int may_explore, int *outcome)
{
    const ct_scoll *c = &t->colls[coll];
    unsigned code = c->code != NULL ? c->code[cell] : 0;
    if (code - 1u < CT_CODE_EXPLORE - 1u) {
        *outcome = CT_PICK_EXPLOIT;
        return (int)code - 1;
    }
    if (code == CT_CODE_EXPLORE) {
        uint32_t r = c->explore[cell];
        if (!may_explore) {
            *outcome = CT_PICK_EXPLOIT;
            return c->best[r];
        }
        *outcome = CT_PICK_EXPLORE;
        double u = ct_select_uniform(seed, comm_id, call_index);
        return c->port[ct_scan(c->prefix + (size_t)r * c->m, c->m, u)];
    }
    if (t->unlisted == CT_UNLISTED_LIBRARY) {
        *outcome = CT_PICK_FIXED;
        return -1;
    }
    if (t->unlisted == CT_UNLISTED_EXPLOIT || !may_explore) {
        *outcome = CT_PICK_EXPLOIT;
        return 0;   /* uniform weights: the first member, default */
    }
    *outcome = CT_PICK_EXPLORE;
    double u = ct_select_uniform(seed, comm_id, call_index);
    return ct_scan(t->uniform + t->uniform_at[coll], ct_select_portfolio_size(coll), u);
}

unsigned ct_select_settled_code(const ct_select *t, int coll, uint32_t cell)
{
    const ct_scoll *c = &t->colls[coll];
    unsigned code = c->code != NULL ? c->code[cell] : 0;
    if (code == CT_CODE_EXPLORE)
        return 1u + c->best[c->explore[cell]];
    return code == 0 ? 1u : code;
}

int ct_select_unlisted_fixed(const ct_select *t)
{
    return t->unlisted != CT_UNLISTED_EXPLORE;
}

int ct_select_pick(const ct_select *t, int coll, const int bins[3], uint64_t seed,
                   uint64_t comm_id, uint64_t call_index, int may_explore, int *outcome)
{
    return ct_select_pick_cell(t, coll, ct_select_cell(t, bins), seed, comm_id, call_index,
                               may_explore, outcome);
}

int ct_select_redraw(const ct_select *t, int coll, uint32_t cell, uint64_t usable, double u)
{
    const ct_scoll *c = &t->colls[coll];
    const double *prefix = t->uniform + t->uniform_at[coll];
    const uint8_t *port = NULL;
    int m = ct_select_portfolio_size(coll);
    if (c->code != NULL && c->code[cell] == CT_CODE_EXPLORE) {
        m = c->m;
        prefix = c->prefix + (size_t)c->explore[cell] * (size_t)m;
        port = c->port;
    }
    double total = 0.0;
    for (int i = 0; i < m; i++)
        if (usable >> (port ? port[i] : i) & 1)
            total += prefix[i] - (i > 0 ? prefix[i - 1] : 0.0);
    if (!(total > 0.0))
        return -1;
    double target = u * total, acc = 0.0;
    int last = -1;
    for (int i = 0; i < m; i++) {
        int index = port ? port[i] : i;
        if (!(usable >> index & 1))
            continue;
        acc += prefix[i] - (i > 0 ? prefix[i - 1] : 0.0);
        last = index;
        if (target < acc)
            return index;
    }
    return last;
}

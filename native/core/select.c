/*
 * Selection tables (docs/select.md): the parser and the content hash (the draw: select_draw.c).
 *
 * Like the profile parser this reads untrusted bytes inside every rank, so it bounds everything
 * (file size, line length, words, bins) and reports the first problem as "file:line: what; how
 * to fix". colltune.learn.table implements the same grammar; colltune.learn.draw the same
 * arithmetic, operation for operation, so both sides pick the same member for the same call.
 *
 * Memory (benchmarks/learning_runtime): a listed collective holds its whole cube as one byte per
 * cell (0 unlisted, 1 + the portfolio index of an exploit cell's best member, or "explore"), so a
 * pick is one load; a collective with explore cells adds a 4-byte index per cell to their prefix
 * sums (computed once here, in the order docs/select.md fixes) and best member. Everything of a
 * collective is one exact-size allocation made when its block is complete.
 *
 * Pure C11 plus POSIX newlocale/strtod_l (the application may have set a locale whose decimal
 * point is a comma); no MPI calls. Longer than our ~550-line rule on purpose: one grammar, read
 * top to bottom next to docs/select.md (the lexer is core/textformat.c, the draw select_draw.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ct_select.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_select_impl.h"
#include "ct_text.h"

#define CT_SEL_MAX_BINS 64
#define CT_SEL_MAX_WORDS (5 + CT_SELECT_MAX_MEMBERS + 1)

typedef struct ct_pcell {
    uint32_t cell;
    uint8_t best;
} ct_pcell;

typedef ct_text_word ct_sword;

enum ct_sstate { CT_S_HEADER, CT_S_KEYS, CT_S_COLL, CT_S_CELLS, CT_S_END };

typedef struct ct_sparser {
    const char *name;
    char *err;
    size_t errlen;
    long line;
    enum ct_sstate state;
    unsigned keys_seen;
    int coll;
    long coll_line;
    ct_select *t;
    /* the block being read: its cube codes (nonzero = seen), port map, explore cells */
    uint8_t *code;
    uint8_t port[CT_SELECT_MAX_MEMBERS];
    ct_pcell *pcells;
    double *pprefix;
    uint32_t npcells, cappcells;
    char quote[CT_TEXT_QUOTE_BYTES];
} ct_sparser;

/* ---- lexical helpers (docs/profile.md rules) ----------------------------------------------- */

#define ct_sfail(ps, line, ...) ct_text_fail((ps)->err, (ps)->errlen, (ps)->name, (line), __VA_ARGS__)
#define ct_is ct_text_is
#define ct_digits ct_text_digits

/* Quoted as colltune.learn.table quotes: printable ASCII as is, other bytes \xNN. */
static const char *ct_sq(ct_sparser *ps, ct_sword w)
{
    return ct_text_quote(ps->quote, w);
}

static int ct_count(ct_sparser *ps, ct_sword w, const char *what, uint64_t lo, uint64_t hi,
                    uint64_t *out)
{
    uint64_t v = 0;
    int ok = ct_digits(w.s, w.n);
    for (size_t i = 0; ok && i < w.n; i++)
        v = v * 10u + (uint64_t)(w.s[i] - '0');
    if (!ok || v < lo || v > hi)
        return ct_sfail(ps, ps->line, "%s '%s' is not a whole number in %llu..%llu", what,
                        ct_sq(ps, w), (unsigned long long)lo, (unsigned long long)hi);
    *out = v;
    return 0;
}

static int ct_decimal(ct_sparser *ps, ct_sword w, const char *what, double *out)
{
    static locale_t c_locale;
    const char *dot = memchr(w.s, '.', w.n);
    size_t whole = dot != NULL ? (size_t)(dot - w.s) : w.n;
    int ok = ct_digits(w.s, whole) && (dot == NULL || ct_digits(dot + 1, w.n - whole - 1));
    if (!ok)
        return ct_sfail(ps, ps->line, "%s '%s' is not a decimal number (digits, optionally '.' "
                        "and digits; no sign or exponent)", what, ct_sq(ps, w));
    if (c_locale == (locale_t)0)
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (c_locale == (locale_t)0)
        return ct_sfail(ps, ps->line, "cannot create the C locale to read decimals");
    char buf[48];
    memcpy(buf, w.s, w.n);
    buf[w.n] = '\0';
    *out = strtod_l(buf, NULL, c_locale);   /* correctly rounded, like Python's float() */
    return 0;
}

/* ---- grammar ------------------------------------------------------------------------------- */

static const char *const ct_keys[] = {"generator", "mpi", "bins", "caps", "unlisted", "budget",
                                     "cellbudget"};
#define CT_NUM_KEYS 7

static int ct_key(ct_sparser *ps, int k, const ct_sword *w, int nw)
{
    ct_select *t = ps->t;
    const char *key = ct_keys[k];
    if (ps->state != CT_S_KEYS)
        return ct_sfail(ps, ps->line, "'%s' after the first collective; move it above the first "
                        "'collective' line", key);
    if (ps->keys_seen & (1u << k))
        return ct_sfail(ps, ps->line, "duplicate '%s' line; keep one", key);
    ps->keys_seen |= 1u << k;
    if (k <= 1) {
        if (nw < 2)
            return ct_sfail(ps, ps->line, "'%s' needs a value: '%s TEXT'", key, key);
        return 0;
    }
    if (k == 2) {
        if (nw != 4)
            return ct_sfail(ps, ps->line, "'bins' takes three numbers: 'bins SIZE NODES PPN'");
        for (int i = 0; i < 3; i++) {
            uint64_t v;
            if (ct_count(ps, w[1 + i], "bins", 1, CT_SEL_MAX_BINS, &v) != 0)
                return -1;
            t->nbins[i] = (int)v;
        }
        t->cells = (uint32_t)(t->nbins[0] * t->nbins[1] * t->nbins[2]);
        return 0;
    }
    if (k == 3) {
        double lo, hi;
        if (nw != 3)
            return ct_sfail(ps, ps->line, "'caps' takes two decimals: 'caps LO HI'");
        if (ct_decimal(ps, w[1], "cap", &lo) != 0 || ct_decimal(ps, w[2], "cap", &hi) != 0)
            return -1;
        if (!(0.0 <= lo && lo <= hi && hi <= 1.0))
            return ct_sfail(ps, ps->line, "caps %g %g invalid: need 0 <= LO <= HI <= 1", lo, hi);
        t->lo = lo;
        t->hi = hi;
        return 0;
    }
    if (k == 4) {
        static const char *const names[] = {"explore", "library", "exploit"};
        for (int i = 0; nw == 2 && i < 3; i++)
            if (ct_is(w[1], names[i])) {
                t->unlisted = i;
                return 0;
            }
        return ct_sfail(ps, ps->line, "'unlisted' takes one of explore, library, exploit");
    }
    if (nw != 2)
        return ct_sfail(ps, ps->line, "'%s' takes one number: '%s N'", key, key);
    return ct_count(ps, w[1], key, 0, UINT64_C(9223372036854775807),
                    k == 5 ? &t->budget : &t->cell_budget);
}

static int ct_grow(void **array, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t cap2 = *cap ? *cap * 2u : 16u;
    while (cap2 < need)
        cap2 *= 2u;
    void *grown = realloc(*array, (size_t)cap2 * elem);
    if (grown == NULL)
        return -1;
    *array = grown;
    *cap = cap2;
    return 0;
}

static void ct_drop_block(ct_sparser *ps)
{
    free(ps->code);
    free(ps->pcells);
    free(ps->pprefix);
    ps->code = NULL;
    ps->pcells = NULL;
    ps->pprefix = NULL;
    ps->npcells = ps->cappcells = 0;
}

/* The finished block of the collective being read, in one exact-size allocation:
 * [prefix sums | explore index | codes | best | port] (most aligned first). */
static int ct_build_block(ct_sparser *ps)
{
    ct_scoll *c = &ps->t->colls[ps->coll];
    uint32_t cells = ps->t->cells, nexp = ps->npcells, m = c->m;
    size_t at_index = (size_t)nexp * m * sizeof(double);
    size_t at_code = at_index + (nexp > 0 ? (size_t)cells * sizeof(uint32_t) : 0);
    size_t at_best = at_code + cells, at_port = at_best + nexp, bytes = at_port + m;
    unsigned char *b = malloc(bytes);
    if (b == NULL)
        return ct_sfail(ps, ps->line, "out of memory");
    uint32_t *index = (uint32_t *)(void *)(b + at_index);
    if (nexp > 0)
        memset(index, 0, (size_t)cells * sizeof *index);
    c->block = b;
    c->block_bytes = bytes;
    c->explore = nexp > 0 ? index : NULL;
    c->prefix = (const double *)(void *)b;
    c->best = b + at_best;
    c->port = b + at_port;
    c->code = b + at_code;
    memcpy(b + at_code, ps->code, cells);
    memcpy(b + at_port, ps->port, m);
    for (uint32_t r = 0; r < nexp; r++) {   /* in file order: r is the explore cell's rank */
        index[ps->pcells[r].cell] = r;
        memcpy(b + (size_t)r * m * sizeof(double), ps->pprefix + (size_t)r * m, m * sizeof(double));
        b[at_best + r] = ps->pcells[r].best;
    }
    ct_drop_block(ps);
    return 0;
}

/* The portfolio a block's name stands for: `<collective>`, `<collective>#nonblocking` or
 * `<collective>#persistent`. */
static int ct_portfolio_index(char *name)
{
    char *form = strchr(name, '#');
    if (form == NULL)
        return colltune_collective_index(name);
    int f = 1;
    while (f < CT_SELECT_FORMS && strcmp(form, CT_SELECT_FORM_SUFFIX(f * CT_NUM_COLLECTIVES)) != 0)
        f++;
    if (f == CT_SELECT_FORMS)
        return -1;
    *form = '\0';
    int coll = colltune_collective_index(name);
    *form = '#';
    return coll < 0 ? -1 : f * CT_NUM_COLLECTIVES + coll;
}

/* The collective of portfolio `p`, and the form's suffix of its name ("" for blocking calls). */
static const char *ct_portfolio_coll(int p, const char **suffix)
{
    *suffix = CT_SELECT_FORM_SUFFIX(p);
    return colltune_collective_name(p % CT_NUM_COLLECTIVES);
}

static int ct_close_block(ct_sparser *ps)
{
    if (ps->state == CT_S_COLL)
    {
        const char *suffix, *cname = ct_portfolio_coll(ps->coll, &suffix);
        return ct_sfail(ps, ps->coll_line, "collective %s%s has no 'members' line; add 'members M1 "
                        "M2 ...' right after it", cname, suffix);
    }
    return ps->state == CT_S_CELLS ? ct_build_block(ps) : 0;
}

static int ct_collective(ct_sparser *ps, const ct_sword *w, int nw)
{
    char name[64];
    if (ps->state == CT_S_HEADER)
        return ct_sfail(ps, ps->line, "'collective' before the header line");
    if (ct_close_block(ps) != 0)
        return -1;
    if (nw != 2)
        return ct_sfail(ps, ps->line, "'collective' takes one name: 'collective NAME'");
    int coll = -1;
    if (w[1].n < sizeof name) {
        memcpy(name, w[1].s, w[1].n);
        name[w[1].n] = '\0';
        coll = ct_portfolio_index(name);
    }
    if (coll < 0)
        return ct_sfail(ps, ps->line, "unknown collective '%s'; use a collective of "
                        "collectives.toml, or <collective>#nonblocking (#persistent) for its "
                        "nonblocking calls (persistent requests)", ct_sq(ps, w[1]));
    if (ps->t->colls[coll].listed)
        return ct_sfail(ps, ps->line, "collective %s appears twice; merge its blocks", name);
    ps->t->colls[coll].listed = 1;
    ps->coll = coll;
    ps->coll_line = ps->line;
    ps->state = CT_S_COLL;
    return 0;
}

/* Portfolio index of a member name of `coll`, or -1 (the message is then in ps->err). */
static int ct_member(ct_sparser *ps, int coll, ct_sword w)
{
    char name[128];
    const char *suffix, *cname = ct_portfolio_coll(coll, &suffix);
    if (w.n >= 4 && memcmp(w.s, "lib:", 4) == 0) {
        size_t cn = strlen(cname);
        int shaped = w.n > 5 + cn && memcmp(w.s + 4, cname, cn) == 0 && w.s[4 + cn] == ':'
                     && memchr(w.s + 5 + cn, ':', w.n - 5 - cn) == NULL;
        if (!shaped)
            return ct_sfail(ps, ps->line, "library member '%s' is not lib:%s:<algorithm>%s",
                            ct_sq(ps, w), cname, suffix);
        int index = ct_select_library_index(coll, w.s, w.n);
        if (index > 0)
            return index;
        const char *note = ct_select_library_note();
        return ct_sfail(ps, ps->line, "member '%s' of %s%s is not offered by this MPI library%s%s; "
                        "write the table for this library with colltune learn table",
                        ct_sq(ps, w), cname, suffix, note[0] ? ": " : "", note);
    }
    if (ct_is(w, "default"))
        return 0;
    int var = -1;
    if (w.n < sizeof name) {
        memcpy(name, w.s, w.n);
        name[w.n] = '\0';
        var = colltune_variant_index(name);
    }
    if (coll >= CT_NUM_COLLECTIVES)
        return ct_sfail(ps, ps->line, "unknown member '%s' of %s%s; use default or "
                        "lib:%s:<algorithm>%s (the started forms have no mock-ups)",
                        ct_sq(ps, w), cname, suffix, cname, suffix);
    if (var < 0 || colltune_variant_collective(var) != coll)
        return ct_sfail(ps, ps->line, "unknown member '%s' of %s; use default, a mock-up of %s "
                        "or lib:%s:<algorithm>", ct_sq(ps, w), cname, cname, cname);
    int index = 1;
    for (int v = 0; v < var; v++)
        index += colltune_variant_collective(v) == coll;
    return index;
}

static int ct_members(ct_sparser *ps, const ct_sword *w, int nw)
{
    if (ps->state != CT_S_COLL)
        return ct_sfail(ps, ps->line, "'members' %s; give it once, right after 'collective NAME'",
                        ps->state == CT_S_CELLS ? "twice in one block"
                                                : "outside a collective block");
    ct_scoll *c = &ps->t->colls[ps->coll];
    if (nw - 1 < 1 || nw - 1 > CT_SELECT_MAX_MEMBERS)
        return ct_sfail(ps, ps->line, "'members' takes 1 to %d member names",
                        CT_SELECT_MAX_MEMBERS);
    for (int i = 1; i < nw; i++) {
        for (int j = 1; j < i; j++)
            if (w[j].n == w[i].n && memcmp(w[j].s, w[i].s, w[i].n) == 0)
                return ct_sfail(ps, ps->line, "member %s is listed twice; list each once",
                                ct_sq(ps, w[i]));
        int index = ct_member(ps, ps->coll, w[i]);
        if (index < 0)
            return -1;
        ps->port[i - 1] = (uint8_t)index;
    }
    ps->code = calloc(ps->t->cells, 1);
    if (ps->code == NULL)
        return ct_sfail(ps, ps->line, "out of memory");
    c->m = (uint8_t)(nw - 1);
    ps->state = CT_S_CELLS;
    return 0;
}

static int ct_cell(ct_sparser *ps, const ct_sword *w, int nw)
{
    static const char *const axes[] = {"size bin", "nodes bin", "ppn bin"};
    ct_select *t = ps->t;
    if (ps->state != CT_S_CELLS)
        return ct_sfail(ps, ps->line, ps->state == CT_S_COLL
                                          ? "'cell' before the block's 'members' line"
                                          : "'cell' outside a collective block; start one with "
                                            "'collective NAME'");
    ct_scoll *c = &t->colls[ps->coll];
    if (nw != 5 + c->m)
        return ct_sfail(ps, ps->line, "'cell' takes S N P MODE and %d weights (one per member), "
                        "got %d fields", c->m, nw - 1);
    uint64_t b[3];
    for (int i = 0; i < 3; i++)
        if (ct_count(ps, w[1 + i], axes[i], 0, (uint64_t)t->nbins[i] - 1, &b[i]) != 0)
            return -1;
    int explore = ct_is(w[4], "explore");
    if (!explore && !ct_is(w[4], "exploit"))
        return ct_sfail(ps, ps->line, "cell mode '%s' is neither explore nor exploit",
                        ct_sq(ps, w[4]));
    double weights[CT_SELECT_MAX_MEMBERS];
    int positive = 0;
    for (int i = 0; i < c->m; i++) {
        if (ct_decimal(ps, w[5 + i], "weight", &weights[i]) != 0)
            return -1;
        positive |= weights[i] > 0.0;
    }
    if (!positive)
        return ct_sfail(ps, ps->line, "the weights of a cell are all 0; give at least one "
                        "positive weight");
    uint32_t cell = (uint32_t)((b[0] * (uint64_t)t->nbins[1] + b[1]) * (uint64_t)t->nbins[2] + b[2]);
    const char *suffix, *cname = ct_portfolio_coll(ps->coll, &suffix);
    if (ps->code[cell] != 0)
        return ct_sfail(ps, ps->line, "cell %llu %llu %llu of %s%s appears twice; keep one",
                        (unsigned long long)b[0], (unsigned long long)b[1],
                        (unsigned long long)b[2], cname, suffix);
    uint8_t best = ps->port[ct_select_pick_exploit(weights, c->m)];
    if (!explore) {
        ps->code[cell] = (uint8_t)(1u + best);
        return 0;
    }
    uint32_t cap = ps->cappcells;
    if (ct_grow((void **)&ps->pcells, &ps->cappcells, ps->npcells + 1, sizeof *ps->pcells) != 0)
        return ct_sfail(ps, ps->line, "out of memory");
    if (ps->cappcells != cap) {   /* keep the prefix sums' capacity in step */
        double *grown = realloc(ps->pprefix, (size_t)ps->cappcells * c->m * sizeof(double));
        if (grown == NULL) {
            ps->cappcells = cap;
            return ct_sfail(ps, ps->line, "out of memory");
        }
        ps->pprefix = grown;
    }
    ps->code[cell] = CT_CODE_EXPLORE;
    ps->pcells[ps->npcells] = (ct_pcell){cell, best};
    ct_select_prefix(weights, c->m, t->lo, t->hi, ps->pprefix + (size_t)ps->npcells * c->m);
    ps->npcells++;
    return 0;
}

static int ct_sline(ct_sparser *ps, const char *s, size_t n)
{
    ct_sword w[CT_SEL_MAX_WORDS];
    if (n > CT_TEXT_MAX_LINE)
        return ct_sfail(ps, ps->line, "line longer than %d bytes; shorten it", CT_TEXT_MAX_LINE);
    if (ct_text_control(s, n) >= 0)
        return ct_sfail(ps, ps->line, "control character in the line; the file must be text");
    int nw = ct_text_split(s, n, w, CT_SEL_MAX_WORDS);
    if (nw == 0 || w[0].s[0] == '#')
        return 0;
    if (ps->state == CT_S_END)
        return ct_sfail(ps, ps->line, "text after 'end'; remove it (only comments may follow)");
    if (ps->state == CT_S_HEADER) {
        if (!ct_is(w[0], "colltune-select"))
            return ct_sfail(ps, ps->line, "not a selection table (the first line must be "
                            "'colltune-select 1'); write one with colltune learn table");
        if (nw != 2 || !ct_is(w[1], "1"))
            return ct_sfail(ps, ps->line, "unsupported selection table version (this libcolltune "
                            "reads version 1); rewrite it with this colltune");
        ps->state = CT_S_KEYS;
        return 0;
    }
    for (int k = 0; k < CT_NUM_KEYS; k++)
        if (ct_is(w[0], ct_keys[k]))
            return ct_key(ps, k, w, nw);
    if (ct_is(w[0], "collective"))
        return ct_collective(ps, w, nw);
    if (ct_is(w[0], "members"))
        return ct_members(ps, w, nw);
    if (ct_is(w[0], "cell"))
        return ct_cell(ps, w, nw);
    if (ct_is(w[0], "end")) {
        if (nw != 1)
            return ct_sfail(ps, ps->line, "'end' takes nothing after it");
        if (ct_close_block(ps) != 0)
            return -1;
        ps->state = CT_S_END;
        return 0;
    }
    return ct_sfail(ps, ps->line, "unknown keyword '%s'; lines start with generator, mpi, bins, "
                    "caps, unlisted, budget, cellbudget, collective, members, cell or end",
                    ct_sq(ps, w[0]));
}

/* Prefix sums of the unlisted uniform draw. */
static void ct_finish(ct_select *t)
{
    double ones[CT_SELECT_MAX_MEMBERS];
    for (int i = 0; i < CT_SELECT_MAX_MEMBERS; i++)
        ones[i] = 1.0;
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++)
        ct_select_prefix(ones, ct_select_portfolio_size(c), t->lo, t->hi, t->uniform + t->uniform_at[c]);
}

static size_t ct_uniform_count(void)
{
    size_t n = 0;
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++)
        n += (size_t)ct_select_portfolio_size(c);
    return n;
}

static ct_select *ct_new(void)
{
    ct_select *t = calloc(1, sizeof *t + ct_uniform_count() * sizeof(double));
    if (t == NULL)
        return NULL;
    t->nbins[0] = 24;
    t->nbins[1] = 4;
    t->nbins[2] = 8;
    t->cells = 24 * 4 * 8;
    t->lo = 0.03;
    t->hi = 0.50;
    t->unlisted = CT_UNLISTED_EXPLORE;
    t->budget = 1000;
    t->cell_budget = 100;
    for (int c = 0, at = 0; c < CT_SELECT_PORTFOLIOS; c++) {
        t->uniform_at[c] = (uint16_t)at;
        at += ct_select_portfolio_size(c);
    }
    return t;
}

int ct_select_parse(const char *text, size_t len, const char *name, ct_select **out, char *err,
                    size_t errlen)
{
    ct_sparser ps;
    memset(&ps, 0, sizeof ps);
    ps.name = name != NULL ? name : "<table>";
    ps.err = err;
    ps.errlen = errlen;
    if (out != NULL)
        *out = NULL;
    if (ct_text_input(text, len, out != NULL, ps.name, 0, "not a selection table", err, errlen) != 0)
        return -1;
    ps.t = ct_new();
    if (ps.t == NULL)
        return ct_sfail(&ps, 0, "out of memory");
    int rc = 0;
    size_t pos = 0, n;
    const char *line;
    while (rc == 0 && ct_text_next_line(text, len, &pos, 1, &line, &n)) {
        ps.line++;
        rc = ct_sline(&ps, line, n);
    }
    if (rc == 0 && ps.state == CT_S_HEADER)
        rc = ct_sfail(&ps, ps.line, "empty file: not a selection table; write one with colltune "
                      "learn table");
    else if (rc == 0 && ps.state != CT_S_END)
        rc = ct_sfail(&ps, ps.line, "file ends without the 'end' line (truncated?); rewrite it "
                      "or add 'end'");
    ct_drop_block(&ps);
    if (rc != 0) {
        ct_select_free(ps.t);
        return -1;
    }
    ps.t->hash = ct_text_fnv1a(CT_TEXT_FNV_BASIS, text, len);
    ct_finish(ps.t);
    *out = ps.t;
    return 0;
}

int ct_select_load(const char *path, ct_select **out, char *err, size_t errlen)
{
    if (out != NULL)
        *out = NULL;
    char *text;
    size_t len;
    if (ct_text_read(path, &text, &len) != 0) {
        ct_text_read_error(err, errlen, path, errno,
                           "point COLLTUNE_SELECT to a readable selection table");
        return -1;
    }
    int rc = ct_select_parse(text, len, path, out, err, errlen);
    free(text);
    return rc;
}

ct_select *ct_select_uniform_table(void)
{
    ct_select *t = ct_new();
    if (t != NULL)
        ct_finish(t);
    return t;
}

void ct_select_free(ct_select *t)
{
    if (t == NULL)
        return;
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++)
        free(t->colls[c].block);
    free(t);
}

uint64_t ct_select_hash(const ct_select *t)
{
    return t != NULL ? t->hash : 0;
}

uint64_t ct_select_budget(const ct_select *t)
{
    return t != NULL ? t->budget : 1000;
}

uint64_t ct_select_cell_budget(const ct_select *t)
{
    return t != NULL ? t->cell_budget : 100;
}

void ct_select_nbins(const ct_select *t, int nbins[3])
{
    for (int i = 0; i < 3; i++)
        nbins[i] = t != NULL ? t->nbins[i] : (int[]){24, 4, 8}[i];
}

size_t ct_select_bytes(const ct_select *t)
{
    if (t == NULL)
        return 0;
    size_t n = sizeof *t + ct_uniform_count() * sizeof(double);
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++)
        n += t->colls[c].block_bytes;
    return n;
}

/*
 * Tuning profiles (docs/profile.md): the parser. What a parsed profile says (content hash,
 * lookup) is profile_rules.c; the in-memory form both share is ct_profile_impl.h.
 *
 * The parser is the only code of the C core that reads untrusted bytes, and it runs inside every
 * rank of an application, so it bounds everything (line length, file size, rule counts), never
 * reads past `len`, and reports the first problem as "file:line: what; how to fix" instead of
 * guessing. The Python reader (colltune.profile) implements the same grammar with the same
 * messages; tests feed both the same files.
 *
 * Pure C11 and no MPI calls: the fuzz harness and the unit test link this file and
 * profile_rules.c with the generated catalog only.
 */
#include "ct_profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_profile_impl.h"
#include "ct_text.h"

#define CT_PROFILE_VERSION "1"
#define CT_PROFILE_MAX_RULES 65536u
#define CT_PROFILE_MAX_BLOCKS 4096u
#define CT_PROFILE_MAX_FIELDS 8
#define CT_PROFILE_MAX_PROCS INT64_C(2147483647)

static const char *const ct_provenance_keys[] = {
    "generator", "source", "mpi", "mpi-version", "machine", "nprocs", "layout",
    "date", "check-run", "min-gain", "scratch-cap", "extension",
};
#define CT_NUM_PROVENANCE (sizeof ct_provenance_keys / sizeof ct_provenance_keys[0])

enum ct_pstate {
    CT_EXPECT_HEADER, /* nothing but comments so far */
    CT_PROVENANCE,    /* after the header, before the first collective */
    CT_IN_COLL,       /* after `collective`, before its first `procs` */
    CT_IN_BLOCK,      /* after `procs`, before its first `bytes` */
    CT_IN_RULES,      /* after at least one `bytes` */
    CT_AFTER_END
};

typedef ct_text_word ct_word;

typedef struct ct_parser {
    const char *name;
    char *err;
    size_t errlen;
    long line;
    enum ct_pstate state;
    unsigned provenance_seen; /* bit i: ct_provenance_keys[i] */
    int coll;                 /* collective of the open section */
    int section;              /* the open section: coll + form * CT_NUM_COLLECTIVES */
    long coll_line;           /* its `collective` line, for "has no procs" */
    long block_line;          /* line of the open `procs`, for "has no bytes" */
    unsigned char coll_seen[CT_PROFILE_SECTIONS];
    ct_profile *p;
    uint32_t cap_blocks, cap_ranges, cap_names;
    char quote[2][CT_TEXT_QUOTE_BYTES];
    char section_name[96];
} ct_parser;

#define ct_fail(ps, line, ...) ct_text_fail((ps)->err, (ps)->errlen, (ps)->name, (line), __VA_ARGS__)
#define ct_word_is ct_text_is
#define ct_number ct_text_u64

/* `slot` selects one of two buffers, for messages that quote two words. */
static const char *ct_q(ct_parser *ps, int slot, ct_word w)
{
    return ct_text_quote(ps->quote[slot], w);
}

static int ct_numbers(ct_parser *ps, ct_word wa, ct_word wb, uint64_t *a, uint64_t *b)
{
    if (ct_number(wa, a) != 0)
        return ct_fail(ps, ps->line, "'%s' is not a number (1 to 19 decimal digits)",
                       ct_q(ps, 0, wa));
    if (ct_number(wb, b) != 0)
        return ct_fail(ps, ps->line, "'%s' is not a number (1 to 19 decimal digits)",
                       ct_q(ps, 0, wb));
    return 0;
}

static int ct_grow(void **array, uint32_t *cap, uint32_t need, uint32_t max, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t cap2 = *cap ? *cap : 16u;
    while (cap2 < need)
        cap2 *= 2u;
    if (cap2 > max)
        cap2 = max;
    void *grown = realloc(*array, (size_t)cap2 * elem);
    if (grown == NULL)
        return -1;
    *array = grown;
    *cap = cap2;
    return 0;
}

static const char *ct_coll_name(int coll)
{
    const char *name = colltune_collective_name(coll);
    return name != NULL ? name : "?";
}

/* The open section's name as messages write it: "allreduce", "allreduce#nonblocking". */
static const char *ct_section_name(ct_parser *ps)
{
    snprintf(ps->section_name, sizeof ps->section_name, "%s%s", ct_coll_name(ps->coll),
             ct_profile_form_suffix(ps->section));
    return ps->section_name;
}

/* How messages name a block: "procs 2..4" or "nodes 2 ppn 4". */
static const char *ct_block_name(char out[64], const ct_pblock *b)
{
    if (b->nodes > 0)
        snprintf(out, 64, "nodes %d ppn %d", b->nodes, b->ppn);
    else
        snprintf(out, 64, "procs %d..%d", b->lo, b->hi);
    return out;
}

/* A section (`whole`) or block left empty when the next one (or `end`) starts is an error. */
static int ct_close_open(ct_parser *ps, int whole)
{
    if (whole && ps->state == CT_IN_COLL)
        return ct_fail(ps, ps->coll_line,
                       "collective %s has no 'procs' or 'nodes' block; add 'procs LO HI' (or "
                       "'nodes N ppn P') with rules or remove it", ct_section_name(ps));
    if (ps->state == CT_IN_BLOCK) {
        char name[64];
        return ct_fail(ps, ps->block_line,
                       "%s of %s has no 'bytes' rules; add 'bytes LO HI VARIANT' lines or remove "
                       "the block", ct_block_name(name, &ps->p->blocks[ps->p->nblocks - 1]),
                       ct_section_name(ps));
    }
    return 0;
}

static int ct_header(ct_parser *ps, const ct_word *w, int nw)
{
    if (!ct_word_is(w[0], "colltune-profile"))
        return ct_fail(ps, ps->line,
                       "not a colltune profile (the first line must be 'colltune-profile "
                       CT_PROFILE_VERSION "'); write one with colltune tune or convert a .prf "
                       "with colltune profile import");
    if (nw != 2)
        return ct_fail(ps, ps->line,
                       "the header takes one version: 'colltune-profile " CT_PROFILE_VERSION
                       "'");
    if (!ct_word_is(w[1], CT_PROFILE_VERSION))
        return ct_fail(ps, ps->line,
                       "unsupported profile version '%s' (this colltune reads version "
                       CT_PROFILE_VERSION "); regenerate the profile with this colltune",
                       ct_q(ps, 0, w[1]));
    ps->state = CT_PROVENANCE;
    return 0;
}

static int ct_provenance(ct_parser *ps, unsigned key, int nw)
{
    const char *name = ct_provenance_keys[key];
    if (ps->state != CT_PROVENANCE)
        return ct_fail(ps, ps->line,
                       "provenance '%s' after the first collective; move it above the first "
                       "'collective' line", name);
    if (ps->provenance_seen & (1u << key))
        return ct_fail(ps, ps->line, "duplicate '%s' line; keep one", name);
    if (nw < 2)
        return ct_fail(ps, ps->line, "'%s' needs a value: '%s VALUE'", name, name);
    ps->provenance_seen |= 1u << key;
    return 0;
}

/* The section a `collective` line names: `<coll>`, `<coll>#nonblocking` or `<coll>#persistent`;
 * -1 for anything else. */
static int ct_section_of(ct_word w)
{
    char name[CT_TEXT_SHOW + 1];
    if (w.n > CT_TEXT_SHOW)
        return -1;
    memcpy(name, w.s, w.n);
    name[w.n] = '\0';
    char *hash = strchr(name, '#');
    int form = 0;
    if (hash != NULL) {
        while (form < CT_PROFILE_FORMS && strcmp(hash, ct_profile_form_suffix(form * CT_NUM_COLLECTIVES)) != 0)
            form++;
        if (form == 0 || form == CT_PROFILE_FORMS)
            return -1;
        *hash = '\0';
    }
    int coll = colltune_collective_index(name);
    return coll < 0 || coll >= CT_NUM_COLLECTIVES ? -1 : form * CT_NUM_COLLECTIVES + coll;
}

static int ct_collective(ct_parser *ps, const ct_word *w, int nw)
{
    if (ct_close_open(ps, 1) != 0)
        return -1;
    if (nw != 2)
        return ct_fail(ps, ps->line, "'collective' takes one name: 'collective NAME'");
    int section = ct_section_of(w[1]);
    if (section < 0)
        return ct_fail(ps, ps->line,
                       "unknown collective '%s'; use a collective of collectives.toml, or "
                       "<collective>#nonblocking (#persistent) for its nonblocking calls "
                       "(persistent requests) (colltune profile show --variants)", ct_q(ps, 0, w[1]));
    ps->coll = section % CT_NUM_COLLECTIVES;
    ps->section = section;
    if (ps->coll_seen[section])
        return ct_fail(ps, ps->line, "collective %s appears twice; merge its sections",
                       ct_section_name(ps));
    ps->coll_seen[section] = 1;
    ps->coll_line = ps->line;
    ps->p->colls[section].first = ps->p->nblocks;
    ps->p->colls[section].count = 0;
    ps->p->colls[section].nfree = 0;
    ps->state = CT_IN_COLL;
    return 0;
}

/* What every block opener (`procs`, `nodes`) checks first: it is inside a section, and the
 * block before it has rules. */
static int ct_block_start(ct_parser *ps, const char *keyword)
{
    if (ps->state != CT_IN_COLL && ps->state != CT_IN_RULES && ps->state != CT_IN_BLOCK)
        return ct_fail(ps, ps->line,
                       "'%s' before any 'collective'; start a section with 'collective NAME'",
                       keyword);
    return ct_close_open(ps, 0);
}

/* Append a block of communicator sizes lo..hi (a layout block: nodes x ppn, lo == hi). */
static int ct_block_add(ct_parser *ps, int lo, int hi, int nodes, int ppn)
{
    ct_profile *p = ps->p;
    if (p->nblocks >= CT_PROFILE_MAX_BLOCKS)
        return ct_fail(ps, ps->line,
                       "more than %u blocks ('procs' and 'nodes'); merge communicator-size ranges",
                       CT_PROFILE_MAX_BLOCKS);
    if (ct_grow((void **)&p->blocks, &ps->cap_blocks, p->nblocks + 1u, CT_PROFILE_MAX_BLOCKS,
                sizeof *p->blocks) != 0)
        return ct_fail(ps, ps->line, "out of memory");
    ct_pblock *b = &p->blocks[p->nblocks++];
    *b = (ct_pblock){lo, hi, nodes, ppn, p->nranges, 0};
    ct_pcoll *c = &p->colls[ps->section];
    c->count++;
    c->nfree += nodes == 0;
    ps->block_line = ps->line;
    ps->state = CT_IN_BLOCK;
    return 0;
}

static int ct_procs(ct_parser *ps, const ct_word *w, int nw)
{
    ct_profile *p = ps->p;
    if (ct_block_start(ps, "procs") != 0)
        return -1;
    if (nw != 3)
        return ct_fail(ps, ps->line, "'procs' takes two numbers: 'procs LO HI'");
    uint64_t lo, hi;
    if (ct_numbers(ps, w[1], w[2], &lo, &hi) != 0)
        return -1;
    if (lo < 1 || lo > hi || hi > (uint64_t)CT_PROFILE_MAX_PROCS)
        return ct_fail(ps, ps->line,
                       "procs %s..%s invalid: need 1 <= LO <= HI <= 2147483647",
                       ct_q(ps, 0, w[1]), ct_q(ps, 1, w[2]));
    const ct_pcoll *c = &p->colls[ps->section];
    if (c->count > c->nfree)
        return ct_fail(ps, ps->line,
                       "procs %d..%d of %s comes after a 'nodes' block; put the layout-free "
                       "'procs' blocks first", (int)lo, (int)hi, ct_section_name(ps));
    if (c->count > 0) {
        const ct_pblock *prev = &p->blocks[p->nblocks - 1];
        if (lo < (uint64_t)prev->lo)
            return ct_fail(ps, ps->line,
                           "procs %d..%d of %s comes after procs %d..%d; sort the blocks by "
                           "communicator size", (int)lo, (int)hi, ct_section_name(ps),
                           prev->lo, prev->hi);
        if (lo <= (uint64_t)prev->hi)
            return ct_fail(ps, ps->line,
                           "procs %d..%d overlaps the previous block %d..%d of %s; make the "
                           "blocks disjoint", (int)lo, (int)hi, prev->lo, prev->hi,
                           ct_section_name(ps));
    }
    return ct_block_add(ps, (int)lo, (int)hi, 0, 0);
}

/* `nodes N ppn P`: the rules for communicators spread over exactly N nodes with P processes on
 * each (docs/profile.md, "Layouts"). */
static int ct_nodes(ct_parser *ps, const ct_word *w, int nw)
{
    ct_profile *p = ps->p;
    if (ct_block_start(ps, "nodes") != 0)
        return -1;
    if (nw != 4 || !ct_word_is(w[2], "ppn"))
        return ct_fail(ps, ps->line, "'nodes' takes a layout: 'nodes NODES ppn PPN' (e.g. "
                                     "'nodes 2 ppn 4')");
    uint64_t nodes, ppn;
    if (ct_numbers(ps, w[1], w[3], &nodes, &ppn) != 0)
        return -1;
    if (nodes < 1 || ppn < 1 || nodes > (uint64_t)CT_PROFILE_MAX_PROCS
        || ppn > (uint64_t)CT_PROFILE_MAX_PROCS || nodes * ppn > (uint64_t)CT_PROFILE_MAX_PROCS)
        return ct_fail(ps, ps->line,
                       "nodes %s ppn %s invalid: need NODES >= 1, PPN >= 1 and NODES x PPN <= "
                       "2147483647", ct_q(ps, 0, w[1]), ct_q(ps, 1, w[3]));
    if (ps->section >= CT_NUM_COLLECTIVES)
        return ct_fail(ps, ps->line,
                       "'nodes' block in %s: a started call cannot learn its communicator's "
                       "layout without blocking; use 'procs LO HI' blocks in this section",
                       ct_section_name(ps));
    const ct_pcoll *c = &p->colls[ps->section];
    if (c->count > c->nfree) {
        const ct_pblock *prev = &p->blocks[p->nblocks - 1];
        uint64_t was = (uint64_t)prev->nodes << 32 | (uint64_t)prev->ppn, now = nodes << 32 | ppn;
        if (now == was)
            return ct_fail(ps, ps->line, "nodes %d ppn %d of %s appears twice; merge the two "
                                         "blocks", (int)nodes, (int)ppn, ct_section_name(ps));
        if (now < was)
            return ct_fail(ps, ps->line,
                           "nodes %d ppn %d of %s comes after nodes %d ppn %d; sort the layout "
                           "blocks by nodes, then ppn", (int)nodes, (int)ppn,
                           ct_section_name(ps), prev->nodes, prev->ppn);
    }
    int size = (int)(nodes * ppn);
    return ct_block_add(ps, size, size, (int)nodes, (int)ppn);
}

/* A started form's rule: `lib:<coll>:<algorithm><suffix>`, kept by name (the library's
 * algorithms are known only at MPI_Init); its index among the profile's names. */
static int ct_started_member(ct_parser *ps, ct_word w, const char *name)
{
    const char *cname = ct_coll_name(ps->coll), *suffix = ct_profile_form_suffix(ps->section);
    size_t cn = strlen(cname), sn = strlen(suffix);
    int shaped = w.n > 5 + cn + sn && w.n < CT_PROFILE_NAME && memcmp(w.s, "lib:", 4) == 0
                 && memcmp(w.s + 4, cname, cn) == 0 && w.s[4 + cn] == ':'
                 && memcmp(w.s + w.n - sn, suffix, sn) == 0
                 && memchr(w.s + 5 + cn, ':', w.n - 5 - cn) == NULL
                 && memchr(w.s + 5 + cn, '#', w.n - 5 - cn - sn) == NULL;
    if (!shaped)
        return ct_fail(ps, ps->line,
                       "'%s' cannot serve %s: its rules name the library's algorithms of that "
                       "form, lib:%s:<algorithm>%s (the started forms have no mock-ups)",
                       ct_q(ps, 0, w), ct_section_name(ps), cname, suffix);
    ct_profile *p = ps->p;
    for (uint32_t i = 0; i < p->nnames; i++)
        if (strcmp(p->names[i], name) == 0)
            return (int)i;
    if (ct_grow((void **)&p->names, &ps->cap_names, p->nnames + 1u, CT_PROFILE_MAX_RULES,
                sizeof *p->names) != 0)
        return ct_fail(ps, ps->line, "out of memory");
    memcpy(p->names[p->nnames], name, strlen(name) + 1);
    return (int)p->nnames++;
}

static int ct_variant(ct_parser *ps, ct_word w)
{
    char name[CT_TEXT_MAX_LINE + 1];
    memcpy(name, w.s, w.n);
    name[w.n] = '\0';
    if (strcmp(name, "default") == 0)
        return ct_fail(ps, ps->line,
                       "'default' cannot be a rule (sizes without a rule use the library); "
                       "remove the line");
    if (ps->section >= CT_NUM_COLLECTIVES)
        return ct_started_member(ps, w, name);
    if (strncmp(name, "lib:", 4) == 0)
        return ct_fail(ps, ps->line,
                       "library algorithm '%s' cannot be applied by the interposer; remove "
                       "the line and use colltune export --native for library algorithms",
                       ct_q(ps, 0, w));
    int v = colltune_variant_index(name);
    if (v < 0)
        return ct_fail(ps, ps->line,
                       "unknown variant '%s'; use a variant of %s (colltune profile show "
                       "--variants)", ct_q(ps, 0, w), ct_coll_name(ps->coll));
    int owner = colltune_variant_collective(v);
    if (owner != ps->coll)
        return ct_fail(ps, ps->line,
                       "variant '%s' belongs to collective %s, not %s; use a variant of %s",
                       name, ct_coll_name(owner), ct_coll_name(ps->coll),
                       ct_coll_name(ps->coll));
    return v;
}

static int ct_bytes(ct_parser *ps, const ct_word *w, int nw)
{
    ct_profile *p = ps->p;
    if (ps->state != CT_IN_BLOCK && ps->state != CT_IN_RULES)
        return ct_fail(ps, ps->line, "'bytes' outside a block; put it after 'procs LO HI' or "
                                     "'nodes N ppn P'");
    if (nw != 4)
        return ct_fail(ps, ps->line, "'bytes' takes LO HI VARIANT: 'bytes 0 1024 NAME'");
    uint64_t lo, hi;
    if (ct_numbers(ps, w[1], w[2], &lo, &hi) != 0)
        return -1;
    if (lo > hi || hi > (uint64_t)INT64_MAX)
        return ct_fail(ps, ps->line,
                       "bytes %s..%s invalid: need LO <= HI <= 9223372036854775807",
                       ct_q(ps, 0, w[1]), ct_q(ps, 1, w[2]));
    ct_pblock *b = &p->blocks[p->nblocks - 1];
    if (b->count > 0) {
        const ct_prange *prev = &p->ranges[p->nranges - 1];
        char name[64];
        if (lo < (uint64_t)prev->lo)
            return ct_fail(ps, ps->line,
                           "bytes %llu..%llu of %s %s comes after bytes %lld..%lld; sort the "
                           "rules by size", (unsigned long long)lo, (unsigned long long)hi,
                           ct_section_name(ps), ct_block_name(name, b), (long long)prev->lo,
                           (long long)prev->hi);
        if (lo <= (uint64_t)prev->hi)
            return ct_fail(ps, ps->line,
                           "bytes %llu..%llu overlaps the previous rule %lld..%lld of %s %s; make "
                           "the ranges disjoint", (unsigned long long)lo, (unsigned long long)hi,
                           (long long)prev->lo, (long long)prev->hi, ct_section_name(ps),
                           ct_block_name(name, b));
    }
    int v = ct_variant(ps, w[3]);
    if (v < 0)
        return -1;
    if (p->nranges >= CT_PROFILE_MAX_RULES)
        return ct_fail(ps, ps->line, "more than %u bytes rules; merge message-size ranges",
                       CT_PROFILE_MAX_RULES);
    if (ct_grow((void **)&p->ranges, &ps->cap_ranges, p->nranges + 1u, CT_PROFILE_MAX_RULES,
                sizeof *p->ranges) != 0)
        return ct_fail(ps, ps->line, "out of memory");
    ct_prange *r = &p->ranges[p->nranges++];
    r->lo = (int64_t)lo;
    r->hi = (int64_t)hi;
    r->variant = v;
    b->count++;
    ps->state = CT_IN_RULES;
    return 0;
}

static int ct_end(ct_parser *ps, int nw)
{
    if (ct_close_open(ps, 1) != 0)
        return -1;
    if (nw != 1)
        return ct_fail(ps, ps->line, "'end' takes no arguments");
    ps->state = CT_AFTER_END;
    return 0;
}

static int ct_statement(ct_parser *ps, const ct_word *w, int nw)
{
    if (ps->state == CT_EXPECT_HEADER)
        return ct_header(ps, w, nw);
    if (ps->state == CT_AFTER_END)
        return ct_fail(ps, ps->line,
                       "'%s' after 'end'; remove it or move it before 'end'", ct_q(ps, 0, w[0]));
    if (ct_word_is(w[0], "collective"))
        return ct_collective(ps, w, nw);
    if (ct_word_is(w[0], "procs"))
        return ct_procs(ps, w, nw);
    if (ct_word_is(w[0], "nodes"))
        return ct_nodes(ps, w, nw);
    if (ct_word_is(w[0], "bytes"))
        return ct_bytes(ps, w, nw);
    if (ct_word_is(w[0], "end"))
        return ct_end(ps, nw);
    for (unsigned k = 0; k < CT_NUM_PROVENANCE; k++)
        if (ct_word_is(w[0], ct_provenance_keys[k]))
            return ct_provenance(ps, k, nw);
    return ct_fail(ps, ps->line,
                   "unknown keyword '%s'; expected collective, procs, nodes, bytes, end or a "
                   "provenance key (docs/profile.md)", ct_q(ps, 0, w[0]));
}

/* One line without its '\n' (and without a '\r' before it). */
static int ct_line(ct_parser *ps, const char *s, size_t n)
{
    if (n > CT_TEXT_MAX_LINE)
        return ct_fail(ps, ps->line, "line longer than %d bytes; shorten it", CT_TEXT_MAX_LINE);
    long bad = ct_text_control(s, n);
    if (bad >= 0)
        return ct_fail(ps, ps->line, "control character 0x%02x; remove it (a profile is text)",
                       (unsigned char)s[bad]);
    ct_word w[CT_PROFILE_MAX_FIELDS];
    int nw = ct_text_split(s, n, w, CT_PROFILE_MAX_FIELDS);
    if (nw == 0 || w[0].s[0] == '#')
        return 0;
    return ct_statement(ps, w, nw);
}

int ct_profile_parse(const char *text, size_t len, const char *name, ct_profile **profile,
                     char *err, size_t errlen)
{
    ct_parser ps;
    memset(&ps, 0, sizeof ps);
    ps.name = name != NULL ? name : "<profile>";
    ps.err = err;
    ps.errlen = errlen;
    if (profile != NULL)
        *profile = NULL;
    if (ct_text_input(text, len, profile != NULL, ps.name, 1,
                      "a profile is never that big (wrong file?)", err, errlen) != 0)
        return -1;
    ps.p = calloc(1, sizeof *ps.p);
    if (ps.p == NULL)
        return ct_fail(&ps, 0, "out of memory");

    int rc = 0;
    size_t pos = 0, n;
    const char *line;
    while (rc == 0 && ct_text_next_line(text, len, &pos, 0, &line, &n)) {
        ps.line++;
        rc = ct_line(&ps, line, n);
    }
    if (rc == 0 && ps.state == CT_EXPECT_HEADER)
        rc = ct_fail(&ps, ps.line > 0 ? ps.line : 1,
                     "no 'colltune-profile " CT_PROFILE_VERSION "' header (empty file?); write a "
                     "profile with colltune tune");
    else if (rc == 0 && ps.state != CT_AFTER_END)
        rc = ct_fail(&ps, ps.line,
                     "file ends without the 'end' line (truncated?); regenerate it with colltune "
                     "tune or add 'end'");
    if (rc != 0) {
        ct_profile_free(ps.p);
        return -1;
    }
    if (ps.p->nnames > 0) {
        ps.p->ids = malloc(ps.p->nnames * sizeof *ps.p->ids);
        if (ps.p->ids == NULL) {
            ct_profile_free(ps.p);
            return ct_fail(&ps, 0, "out of memory");
        }
        for (uint32_t i = 0; i < ps.p->nnames; i++)
            ps.p->ids[i] = -1;   /* nothing served until ct_profile_resolve */
    }
    ps.p->hash = ct_profile_content_hash(ps.p);
    *profile = ps.p;
    return 0;
}

int ct_profile_load(const char *path, ct_profile **profile, char *err, size_t errlen)
{
    if (profile != NULL)
        *profile = NULL;
    char *text;
    size_t len;
    if (ct_text_read(path, &text, &len) != 0) {
        ct_text_read_error(err, errlen, path, errno, "point COLLTUNE_PROFILE to a readable profile");
        return -1;
    }
    int rc = ct_profile_parse(text, len, path, profile, err, errlen);
    free(text);
    return rc;
}

void ct_profile_free(ct_profile *profile)
{
    if (profile == NULL)
        return;
    free(profile->blocks);
    free(profile->ranges);
    free(profile->names);
    free(profile->ids);
    free(profile);
}


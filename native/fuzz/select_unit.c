/*
 * Unit test of the selection-table core (native/core/select.c): the draw against the test
 * vectors of docs/select.md (the Python side checks the same numbers in tests/test_learn_table.py),
 * the explore probabilities digit for digit, parsing, lookup and the errors that name a line.
 * Builds with plain gcc, no MPI:
 *
 *   python3 native/fuzz/gen_names.py OUT && gcc -std=c11 -D_GNU_SOURCE -Inative/include -IOUT \
 *       -Inative/generated native/fuzz/select_unit.c native/core/select.c native/core/select_draw.c \
 *       native/core/textformat.c OUT/ct_catalog.c -o select_unit
 *
 * Prints one line per failed check and "select_unit: N checks, M failed"; exit 1 on failure.
 * With arguments `pick FILE COLL S N P SEED COMM CALL` it prints the member a call gets (the
 * Python test compares it with colltune.learn.table on the same table); with `bytes FILE` the
 * heap bytes the parsed table occupies (benchmarks/learning_runtime).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_select.h"
#include "unit_check.h"

static const struct {
    uint64_t seed, comm, call, bits;
    double u;
    int pick_a, pick_b;
} vectors[] = {
    {UINT64_C(0x0000000000000000), 0, 0, UINT64_C(0xe220a8397b1dcdaf), 0.8833108082136426, 3, 2},
    {UINT64_C(0x0000000000000001), 0, 0, UINT64_C(0x910a2dec89025cc1), 0.5665615751722809, 1, 0},
    {UINT64_C(0x0123456789abcdef), 1, 0, UINT64_C(0x1f733cd593b32ebe), 0.12285213674813333, 0, 0},
    {UINT64_C(0x0123456789abcdef), 1, 1, UINT64_C(0x61228819c2255be5), 0.3794331610571552, 0, 0},
    {UINT64_C(0x0123456789abcdef), 7, 1000, UINT64_C(0xa6bdfa95e8b53763), 0.6513363471974187, 1, 0},
    {UINT64_C(0xffffffffffffffff), 4294967295u, 4294967295u, UINT64_C(0xfce6955d82781f96),
     0.9878934243483574, 3, 4},
    {UINT64_C(0x000000000000002a), 3, 17, UINT64_C(0xd5657a4085711121), 0.8335796744845008, 2, 1},
};

static void test_draw(void)
{
    static const double a[] = {0.40, 0.35, 0.10, 0.15}, b[] = {1, 0, 0, 0, 0};
    CHECK(ct_splitmix64(0) == UINT64_C(0xe220a8397b1dcdaf));
    CHECK(ct_splitmix64(1) == UINT64_C(0x910a2dec89025cc1));
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint64_t gold = UINT64_C(0x9E3779B97F4A7C15);
        uint64_t bits = ct_splitmix64(vectors[i].seed ^ (vectors[i].comm * gold) ^ vectors[i].call);
        double u = ct_select_uniform(vectors[i].seed, vectors[i].comm, vectors[i].call);
        CHECK(bits == vectors[i].bits);
        CHECK(u == vectors[i].u);
        CHECK(ct_select_pick_explore(a, 4, 0.03, 0.50, u) == vectors[i].pick_a);
        CHECK(ct_select_pick_explore(b, 5, 0.03, 0.50, u) == vectors[i].pick_b);
    }
}

static void check_probs(const double *w, int m, double lo, double hi, const char *expect)
{
    double p[8];
    char text[512] = "";
    size_t used = 0;
    CHECK(ct_select_probabilities(w, m, lo, hi, p) == 0);
    for (int i = 0; i < m; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%.17g", i ? " " : "", p[i]);
    CHECK(strcmp(text, expect) == 0);
    if (strcmp(text, expect) != 0)
        printf("  got %s\n  want %s\n", text, expect);
}

static void test_probabilities(void)
{
    static const double b[] = {1, 0, 0, 0, 0}, c[] = {0.9, 0.05, 0.05}, d[] = {6, 4, 2, 2, 4, 2},
                        e[] = {0.2, 0.5, 0.5}, z[] = {0, 0};
    check_probs(b, 5, 0.03, 0.50, "0.80645161290322565 0.04838709677419354 0.04838709677419354 "
                                  "0.04838709677419354 0.04838709677419354");
    check_probs(c, 3, 0.03, 0.50, "0.83333333333333326 0.083333333333333329 0.083333333333333329");
    check_probs(d, 6, 0, 1, "0.30000000000000004 0.20000000000000004 0.10000000000000002 "
                            "0.10000000000000002 0.20000000000000004 0.10000000000000002");
    CHECK(ct_select_pick_explore(d, 6, 0, 1, 0.645) == 3);   /* IOTA, Table 4.2 */
    CHECK(ct_select_pick_exploit(e, 3) == 1);
    double p[2];
    CHECK(ct_select_probabilities(z, 2, 0.03, 0.5, p) == -1);
}

static ct_select *parse(const char *text, char *err, size_t errlen)
{
    ct_select *t = NULL;
    if (ct_select_parse(text, strlen(text), "t", &t, err, errlen) != 0)
        return NULL;
    return t;
}

static const char *table =
    "colltune-select 1\n"
    "# comment\n"
    "generator colltune 0.1.0\n"
    "bins 24 4 8\n"
    "caps 0.03 0.50\n"
    "unlisted library\n"
    "budget 7\n"
    "cellbudget 3\n"
    "collective allreduce\n"
    "  members allreduce_as_reduce_bcast default\n"
    "  cell 4 0 1 explore 0.5 0.5\n"
    "  cell 5 0 1 exploit 0.1 0.9\n"
    "end\n";

static void test_table(void)
{
    char err[512];
    ct_select *t = parse(table, err, sizeof err);
    CHECK(t != NULL);
    if (t == NULL) {
        printf("  %s\n", err);
        return;
    }
    int coll = colltune_collective_index("allreduce"), outcome = -1;
    int v = colltune_variant_index("allreduce_as_reduce_bcast");
    CHECK(ct_select_budget(t) == 7);
    CHECK(ct_select_cell_budget(t) == 3);
    int exploit[3] = {5, 0, 1}, explore[3] = {4, 0, 1}, other[3] = {6, 0, 1};
    CHECK(ct_select_pick(t, coll, exploit, 0, 0, 0, 1, &outcome) == 0 && outcome == CT_PICK_EXPLOIT);
    CHECK(ct_select_pick(t, coll, other, 0, 0, 0, 1, &outcome) == -1 && outcome == CT_PICK_FIXED);
    /* u(0, 0, 0) = 0.88 >= 0.5: the second member (default); budget spent: best = first. */
    int m = ct_select_pick(t, coll, explore, 0, 0, 0, 1, &outcome);
    CHECK(m == 0 && outcome == CT_PICK_EXPLORE);
    m = ct_select_pick(t, coll, explore, 0, 0, 2, 1, &outcome);
    CHECK(ct_select_member_variant(coll, m) == (ct_select_uniform(0, 0, 2) < 0.5 ? v : -1));
    CHECK(ct_select_pick(t, coll, explore, 0, 0, 0, 0, &outcome) != -1 && outcome == CT_PICK_EXPLOIT);
    CHECK(ct_select_member_variant(coll, ct_select_pick(t, coll, explore, 0, 0, 0, 0, &outcome)) == v);
    CHECK(ct_select_hash(t) != 0);
    ct_select_free(t);

    static const struct {
        const char *text, *err;
    } bad[] = {
        {"", "t:0: empty file: not a selection table; write one with colltune learn table"},
        {"colltune-select 2\nend\n", "t:1: unsupported selection table version (this libcolltune "
                                     "reads version 1); rewrite it with this colltune"},
        {"colltune-select 1\ncollective allreduce\n  cell 1 0 0 explore 1\nend\n",
         "t:3: 'cell' before the block's 'members' line"},
        {"colltune-select 1\ncollective allreduce\nend\n",
         "t:2: collective allreduce has no 'members' line; add 'members M1 M2 ...' right after it"},
        {"colltune-select 1\ncollective bcast\n members default\n cell 24 0 0 explore 1\nend\n",
         "t:4: size bin '24' is not a whole number in 0..23"},
        {"colltune-select 1\ncollective bcast\n members default\n cell 1 0 0 explore 1\n"
         " cell 1 0 0 exploit 2\nend\n", "t:5: cell 1 0 0 of bcast appears twice; keep one"},
        {"colltune-select 1\ncollective bcast\n members default lib:bcast:4\nend\n",
         "t:3: member 'lib:bcast:4' of bcast is not offered by this MPI library; write the "
         "table for this library with colltune learn table"},
        {"colltune-select 1\ncollective bcast\n members allreduce_as_reduce_bcast\nend\n",
         "t:3: unknown member 'allreduce_as_reduce_bcast' of bcast; use default, a mock-up of "
         "bcast or lib:bcast:<algorithm>"},
        {"colltune-select 1\ncollective bcast\n members default\n cell 1 0 0 explore 0\nend\n",
         "t:4: the weights of a cell are all 0; give at least one positive weight"},
        {"colltune-select 1\ncaps 0.6 0.5\nend\n", "t:2: caps 0.6 0.5 invalid: need 0 <= LO <= HI <= 1"},
        {"colltune-select 1\nend\nx\n", "t:3: text after 'end'; remove it (only comments may follow)"},
        {"colltune-select 1\ncollective bcast\n members default\n cell 1 0 0 explore -1\nend\n",
         "t:4: weight '-1' is not a decimal number (digits, optionally '.' and digits; no sign "
         "or exponent)"},
        {"colltune-select 1\n", "t:1: file ends without the 'end' line (truncated?); rewrite it "
                                "or add 'end'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(parse(bad[i].text, err, sizeof err) == NULL);
        CHECK(strcmp(err, bad[i].err) == 0);
        if (strcmp(err, bad[i].err) != 0)
            printf("  got  %s\n  want %s\n", err, bad[i].err);
    }
}

/* The redraw of an explored call among the members proven for it: the cell's distribution
 * restricted to `usable`, scanned with the second uniform number. */
static void test_redraw(void)
{
    char err[512];
    ct_select *t = parse(table, err, sizeof err);
    ct_select *u = parse("colltune-select 1\nunlisted explore\nend\n", err, sizeof err);
    CHECK(t != NULL && u != NULL);
    if (t == NULL || u == NULL)
        return;
    int coll = colltune_collective_index("allreduce");
    int v = colltune_variant_index("allreduce_as_reduce_bcast");
    int first = -1;   /* the portfolio index of allreduce_as_reduce_bcast */
    for (int i = 0; i < ct_select_portfolio_size(coll); i++)
        if (ct_select_member_variant(coll, i) == v)
            first = i;
    CHECK(first > 0);
    int bins[3] = {4, 0, 1};
    uint32_t cell = ct_select_cell(t, bins);
    uint64_t both = 1 | (uint64_t)1 << first;
    /* weights 0.5 0.5 in the table's order (the mock-up, then default) */
    CHECK(ct_select_redraw(t, coll, cell, both, 0.25) == first);
    CHECK(ct_select_redraw(t, coll, cell, both, 0.75) == 0);
    CHECK(ct_select_redraw(t, coll, cell, 1, 0.25) == 0);
    CHECK(ct_select_redraw(t, coll, cell, (uint64_t)1 << first, 0.99) == first);
    CHECK(ct_select_redraw(t, coll, cell, (uint64_t)1 << 40, 0.5) == -1);
    /* unlisted cells of a uniform table: equal weights over the usable members */
    int m = ct_select_portfolio_size(coll);
    uint64_t two = 1 | (uint64_t)1 << (m - 1);
    CHECK(ct_select_redraw(u, coll, cell, two, 0.49) == 0);
    CHECK(ct_select_redraw(u, coll, cell, two, 0.51) == m - 1);
    CHECK(ct_select_redraw(u, coll, cell, 0, 0.5) == -1);
    ct_select_free(t);
    ct_select_free(u);
}

/* A spent budget: the runtime's short path reads ct_select_settled_code where the full path asks
 * ct_select_pick_cell with may_explore 0; both must pick alike in every cell, listed or not. */
static void test_settled(void)
{
    const char *texts[] = {
        table,
        "colltune-select 1\nunlisted explore\ncollective allreduce\n"
        "  members default allreduce_as_reduce_bcast\n  cell 16 0 2 explore 0.1 0.9\n"
        "  cell 3 0 0 explore 0.9 0.1\n  cell 4 0 0 exploit 0.2 0.8\nend\n",
        "colltune-select 1\nunlisted exploit\nend\n",
    };
    char err[512];
    int mismatches = 0, checked = 0;
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        ct_select *t = parse(texts[k], err, sizeof err);
        CHECK(t != NULL);
        if (t == NULL)
            continue;
        int nbins[3];
        ct_select_nbins(t, nbins);
        uint32_t cells = (uint32_t)(nbins[0] * nbins[1] * nbins[2]);
        for (int coll = 0; coll < CT_NUM_COLLECTIVES; coll++)
            for (uint32_t cell = 0; cell < cells; cell++) {
                int outcome = -1;
                int m = ct_select_pick_cell(t, coll, cell, 1, 2, 3, 0, &outcome);
                unsigned want = m < 0 ? 1u : 1u + (unsigned)m;   /* "library" is member 0's code */
                mismatches += ct_select_settled_code(t, coll, cell) != want;
                checked++;
            }
        ct_select_free(t);
    }
    CHECK(checked == 3 * CT_NUM_COLLECTIVES * 24 * 4 * 8 && mismatches == 0);
    /* the second table's explore cell 16 0 2 settles on its best, the mock-up */
    ct_select *t = parse(texts[1], err, sizeof err);
    int coll = colltune_collective_index("allreduce"), bins[3] = {16, 0, 2};
    int v = colltune_variant_index("allreduce_as_reduce_bcast");
    CHECK(t != NULL && ct_select_member_variant(coll, (int)ct_select_settled_code(t, coll, ct_select_cell(t, bins)) - 1) == v);
    ct_select_free(t);
}

/* Library members come after the mock-ups, carry the runtime's id, and only registered names
 * parse; the registry's note ends the refusal. */
static void test_library(void)
{
    char err[512];
    int coll = colltune_collective_index("bcast"), outcome = -1;
    int base = ct_select_portfolio_size(coll);
    ct_select_clear_library(NULL);
    CHECK(ct_select_add_library(coll, "lib:bcast:binomial", 1000) == 0);
    CHECK(ct_select_portfolio_size(coll) == base + 1);
    CHECK(strcmp(ct_select_member_name(coll, base), "lib:bcast:binomial") == 0);
    CHECK(ct_select_member_variant(coll, base) == 1000);
    ct_select *t = parse("colltune-select 1\ncollective bcast\n members lib:bcast:binomial default\n"
                         " cell 3 0 0 exploit 1 0\nend\n", err, sizeof err);
    int bins[3] = {3, 0, 0};
    CHECK(t != NULL && ct_select_pick(t, coll, bins, 0, 0, 0, 1, &outcome) == base);
    ct_select_free(t);
    CHECK(parse("colltune-select 1\ncollective bcast\n members lib:bcast:chain\nend\n", err,
                sizeof err) == NULL);
    CHECK(strcmp(err, "t:3: member 'lib:bcast:chain' of bcast is not offered by this MPI library; "
                      "write the table for this library with colltune learn table") == 0);
    ct_select_clear_library("why");
    CHECK(ct_select_portfolio_size(coll) == base);
    CHECK(parse("colltune-select 1\ncollective bcast\n members lib:bcast:binomial\nend\n", err,
                sizeof err) == NULL);
    CHECK(strcmp(err, "t:3: member 'lib:bcast:binomial' of bcast is not offered by this MPI "
                      "library: why; write the table for this library with colltune learn table")
          == 0);
    ct_select_clear_library(NULL);
    /* No path: a message saying so, not the strerror of whatever failed before. */
    ct_select *none = (ct_select *)&err;
    CHECK(ct_select_load(NULL, &none, err, sizeof err) == -1 && none == NULL);
    CHECK(strcmp(err, "(null): no path given; point COLLTUNE_SELECT to a readable selection "
                      "table") == 0);
}

static int pick_command(char **argv)
{
    char err[1024];
    ct_select *t = NULL;
    if (ct_select_load(argv[2], &t, err, sizeof err) != 0) {
        printf("error: %s\n", err);
        return 1;
    }
    int coll = colltune_collective_index(argv[3]), outcome = 0;
    int bins[3] = {atoi(argv[4]), atoi(argv[5]), atoi(argv[6])};
    int m = ct_select_pick(t, coll, bins, strtoull(argv[7], NULL, 0), strtoull(argv[8], NULL, 0),
                           strtoull(argv[9], NULL, 0), 1, &outcome);
    int v = m > 0 ? ct_select_member_variant(coll, m) : -1;
    printf("%s %d\n", m < 0 ? "library" : m == 0 ? "default" : colltune_variant_name(v), outcome);
    ct_select_free(t);
    return 0;
}

static int bytes_command(const char *path)
{
    char err[1024];
    ct_select *t = NULL;
    if (ct_select_load(path, &t, err, sizeof err) != 0) {
        printf("error: %s\n", err);
        return 1;
    }
    printf("%zu\n", ct_select_bytes(t));
    ct_select_free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "bytes") == 0)
        return bytes_command(argv[2]);
    if (argc == 10 && strcmp(argv[1], "pick") == 0)
        return pick_command(argv);
    test_draw();
    test_probabilities();
    test_table();
    test_redraw();
    test_settled();
    test_library();
    return unit_check_done("select_unit");
}

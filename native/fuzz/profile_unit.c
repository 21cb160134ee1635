/*
 * Unit test of the profile parser's C API beyond what profile_check exercises from files:
 * argument edge cases, message truncation, lookup at every boundary of a large generated
 * profile, and hash invariance under spelling changes. Builds with plain gcc, no MPI:
 *
 *   python3 native/fuzz/gen_names.py OUT && gcc -std=c11 -Inative/include -IOUT \
 *       native/fuzz/profile_unit.c native/core/profile.c native/core/profile_rules.c \
 *       native/core/textformat.c OUT/ct_catalog.c -o profile_unit
 *
 * Prints one line per failed check and "profile_unit: N checks, M failed"; exit 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_profile.h"
#include "unit_check.h"

static ct_profile *parse(const char *text, char *err, size_t errlen)
{
    ct_profile *p = NULL;
    if (ct_profile_parse(text, strlen(text), "t", &p, err, errlen) != 0)
        return NULL;
    return p;
}

static void test_arguments(void)
{
    char err[256];
    ct_profile *p = (ct_profile *)&err; /* must be reset to NULL on failure */
    CHECK(ct_profile_parse(NULL, 0, "t", &p, err, sizeof err) == -1 && p == NULL);
    CHECK(strcmp(err, "t:1: no 'colltune-profile 1' header (empty file?); write a profile with "
                      "colltune tune") == 0);
    CHECK(ct_profile_parse(NULL, 5, "t", &p, err, sizeof err) == -1 && p == NULL);
    CHECK(ct_profile_parse("end", 3, "t", NULL, err, sizeof err) == -1);
    /* A message never overflows its buffer and is always terminated. */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    CHECK(ct_profile_parse("x", 1, "name", &p, tiny, sizeof tiny) == -1);
    CHECK(strcmp(tiny, "name:1:") == 0);
    CHECK(ct_profile_parse("x", 1, "name", &p, NULL, 0) == -1);
    CHECK(ct_profile_load("/nonexistent/colltune.prof", &p, err, sizeof err) == -1 && p == NULL);
    CHECK(strncmp(err, "/nonexistent/colltune.prof:0: cannot open: ", 43) == 0);
    CHECK(ct_profile_load(NULL, &p, err, sizeof err) == -1 && p == NULL);
    CHECK(strcmp(err, "(null): no path given; point COLLTUNE_PROFILE to a readable profile") == 0);
    CHECK(ct_profile_lookup(NULL, CT_COLL_BCAST, 4, 8) == -1);
    CHECK(ct_profile_hash(NULL) == 0);
    CHECK(ct_profile_rule_count(NULL) == 0);
    ct_profile_free(NULL);
}

/* The text length given, not the NUL, ends the input: bytes after `len` are never read. */
static void test_length_bounds(void)
{
    char err[256];
    const char *text = "colltune-profile 1\nend\nGARBAGE";
    ct_profile *p = NULL;
    CHECK(ct_profile_parse(text, 23, "t", &p, err, sizeof err) == 0 && p != NULL);
    ct_profile_free(p);
    CHECK(ct_profile_parse(text, 22, "t", &p, err, sizeof err) == 0);
    ct_profile_free(p);
    CHECK(ct_profile_parse(text, 21, "t", &p, err, sizeof err) == -1);
    CHECK(strcmp(err, "t:2: unknown keyword 'en'; expected collective, procs, nodes, bytes, end "
                      "or a provenance key (docs/profile.md)") == 0);
}

/* 64 blocks of 100 rules each: every boundary answers exactly. */
static void test_lookup_large(void)
{
    size_t cap = 1u << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, "colltune-profile 1\ncollective allreduce\n");
    for (int b = 0; b < 64; b++) {
        len += (size_t)snprintf(text + len, cap - len, "procs %d %d\n", 10 * b + 2, 10 * b + 6);
        for (int r = 0; r < 100; r++)
            len += (size_t)snprintf(text + len, cap - len, "bytes %d %d %s\n", 1000 * r + 10,
                                    1000 * r + 500,
                                    r % 2 ? "allreduce_as_reduce_bcast"
                                          : "allreduce_as_reducescatter_allgatherv");
    }
    len += (size_t)snprintf(text + len, cap - len, "end\n");
    char err[256];
    ct_profile *p = NULL;
    CHECK(ct_profile_parse(text, len, "big", &p, err, sizeof err) == 0);
    if (p == NULL) {
        printf("  %s\n", err);
        free(text);
        return;
    }
    CHECK(ct_profile_rule_count(p) == 6400);
    int wrong = 0;
    for (int procs = 0; procs < 650; procs++) {
        int in_block = procs >= 2 && (procs - 2) % 10 <= 4 && (procs - 2) / 10 < 64;
        for (int r = -1; r <= 100; r++) {
            const int64_t probes[] = {1000 * r + 9, 1000 * r + 10, 1000 * r + 500, 1000 * r + 501};
            for (int k = 0; k < 4; k++) {
                int64_t bytes = probes[k];
                int64_t rr = (bytes - 10) / 1000;
                int covered = in_block && bytes >= 10 && rr < 100 && bytes >= 1000 * rr + 10 &&
                              bytes <= 1000 * rr + 500;
                int want = !covered ? -1
                           : rr % 2 ? CT_VAR_ALLREDUCE_AS_REDUCE_BCAST
                                    : CT_VAR_ALLREDUCE_AS_REDUCESCATTER_ALLGATHERV;
                if (ct_profile_lookup(p, CT_COLL_ALLREDUCE, procs, bytes) != want)
                    wrong++;
            }
        }
    }
    CHECK(wrong == 0);
    CHECK(ct_profile_lookup(p, CT_COLL_BCAST, 2, 10) == -1);
    CHECK(ct_profile_lookup(p, -1, 2, 10) == -1);
    CHECK(ct_profile_lookup(p, CT_NUM_COLLECTIVES, 2, 10) == -1);
    CHECK(ct_profile_lookup(p, CT_COLL_ALLREDUCE, 2, -5) == -1);
    ct_profile_free(p);
    free(text);
}

/* Layout blocks: for every communicator of 1..64 processes and every uniform layout of it, an
 * exact layout block decides alone (its uncovered sizes use the library although the layout-free
 * block covers them); a layout without a block, or one that does not multiply to the size, gets
 * the layout-free answer. */
static void test_layouts(void)
{
    static const int var[3] = {CT_VAR_ALLREDUCE_AS_REDUCE_BCAST,
                               CT_VAR_ALLREDUCE_AS_REDUCESCATTER_ALLGATHERV,
                               CT_VAR_ALLREDUCE_AS_REDUCESCATTERBLOCK_ALLGATHER};
    size_t cap = 1u << 16, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, "colltune-profile 1\ncollective allreduce\n"
                            "procs 1 64\nbytes 0 100 allreduce_as_reduce_bcast\n");
    for (int n = 1; n <= 8; n++)
        for (int q = 1; q <= 8; q++)
            len += (size_t)snprintf(text + len, cap - len, "nodes %d ppn %d\nbytes 0 50 %s\n", n, q,
                                    colltune_variant_name(var[(n + q) % 3]));
    len += (size_t)snprintf(text + len, cap - len, "end\n");
    char err[256];
    ct_profile *p = NULL;
    CHECK(ct_profile_parse(text, len, "t", &p, err, sizeof err) == 0);
    free(text);
    if (p == NULL) {
        printf("  %s\n", err);
        return;
    }
    CHECK(ct_profile_has_layouts(p, CT_COLL_ALLREDUCE) && ct_profile_has_layouts(p, -1));
    CHECK(!ct_profile_has_layouts(p, CT_COLL_BCAST) && !ct_profile_has_layouts(NULL, -1));
    int wrong = 0;
    for (int size = 1; size <= 64; size++)
        for (int n = 1; n <= 64; n++)
            for (int q = 1; q <= 64; q++)
                for (int k = 0; k < 5; k++) {
                    const int64_t bytes = (int64_t[]){0, 50, 51, 100, 101}[k];
                    int free_v = bytes <= 100 ? var[0] : -1;
                    int block = n * q == size && n <= 8 && q <= 8;
                    int want = !block ? free_v : bytes <= 50 ? var[(n + q) % 3] : -1;
                    wrong += ct_profile_lookup_layout(p, CT_COLL_ALLREDUCE, size, n, q, bytes) != want;
                    wrong += ct_profile_lookup(p, CT_COLL_ALLREDUCE, size, bytes) != free_v;
                }
    CHECK(wrong == 0);
    CHECK(ct_profile_lookup_layout(p, CT_COLL_ALLREDUCE, 4, 2, 2, 0) == var[1]);
    CHECK(ct_profile_lookup_layout(p, CT_COLL_ALLREDUCE, 4, 2, 2, 51) == -1);
    CHECK(ct_profile_lookup_layout(p, CT_COLL_ALLREDUCE, 4, 0, 0, 51) == var[0]);
    CHECK(ct_profile_lookup_layout(p, CT_COLL_ALLREDUCE, 65, 65, 1, 0) == -1);
    CHECK(ct_profile_rule_count(p) == 65);
    ct_profile_free(p);
    /* The layout is part of the hash: the same rule layout-free or on 2 x 2 differs. */
    ct_profile *a = parse("colltune-profile 1\ncollective bcast\nprocs 4 4\n"
                          "bytes 16 16 bcast_as_allgatherv\nend\n", err, sizeof err);
    ct_profile *b = parse("colltune-profile 1\ncollective bcast\nnodes 2 ppn 2\n"
                          "bytes 16 16 bcast_as_allgatherv\nend\n", err, sizeof err);
    CHECK(a != NULL && b != NULL && ct_profile_hash(a) != ct_profile_hash(b));
    if (b != NULL)   /* FNV-1a 64 of "bcast 4 4 16 16 bcast_as_allgatherv 2x2\n" (Python too) */
        printf("hash-layout %016llx\n", (unsigned long long)ct_profile_hash(b));
    ct_profile_free(a);
    ct_profile_free(b);
}

/* The hash is over the rules: spelling, provenance, comments and section order do not count. */
static void test_hash(void)
{
    char err[256];
    ct_profile *a = parse("colltune-profile 1\nmachine a\ncollective scan\nprocs 2 2\n"
                          "bytes 0 8 scan_as_exscan_reducelocal\ncollective bcast\nprocs 4 4\n"
                          "bytes 16 16 bcast_as_allgatherv\nend\n", err, sizeof err);
    ct_profile *b = parse("# other file\r\ncolltune-profile 1\r\ncollective bcast\r\n procs 004 4\r\n"
                          "\tbytes 016  16 bcast_as_allgatherv\r\ncollective scan\r\nprocs 2 2\r\n"
                          "bytes 00 8 scan_as_exscan_reducelocal\r\nend", err, sizeof err);
    ct_profile *c = parse("colltune-profile 1\ncollective scan\nprocs 2 2\n"
                          "bytes 0 9 scan_as_exscan_reducelocal\ncollective bcast\nprocs 4 4\n"
                          "bytes 16 16 bcast_as_allgatherv\nend\n", err, sizeof err);
    CHECK(a != NULL && b != NULL && c != NULL);
    if (a && b && c) {
        CHECK(ct_profile_hash(a) == ct_profile_hash(b));
        CHECK(ct_profile_hash(a) != ct_profile_hash(c));
        /* FNV-1a 64 of "bcast 4 4 16 16 bcast_as_allgatherv\nscan 2 2 0 8 scan_as_exscan_
         * reducelocal\n", computed independently by colltune.profile (tests compare both). */
        printf("hash %016llx\n", (unsigned long long)ct_profile_hash(a));
    }
    ct_profile_free(a);
    ct_profile_free(b);
    ct_profile_free(c);
    ct_profile *empty = parse("colltune-profile 1\nend\n", err, sizeof err);
    CHECK(empty != NULL && ct_profile_hash(empty) == UINT64_C(14695981039346656037));
    ct_profile_free(empty);
}

/* Limits: exactly at the limit is accepted, one more is refused with its line. */
static void test_limits(void)
{
    size_t cap = 8u << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, "colltune-profile 1\ncollective bcast\nprocs 1 1\n");
    for (long r = 0; r < 65536; r++)
        len += (size_t)snprintf(text + len, cap - len, "bytes %ld %ld bcast_as_allgatherv\n", r, r);
    size_t before_end = len;
    len += (size_t)snprintf(text + len, cap - len, "end\n");
    char err[256];
    ct_profile *p = NULL;
    CHECK(ct_profile_parse(text, len, "t", &p, err, sizeof err) == 0);
    CHECK(ct_profile_rule_count(p) == 65536);
    CHECK(ct_profile_lookup(p, CT_COLL_BCAST, 1, 65535) == CT_VAR_BCAST_AS_ALLGATHERV);
    ct_profile_free(p);
    len = before_end;
    len += (size_t)snprintf(text + len, cap - len, "bytes 70000 70000 bcast_as_allgatherv\nend\n");
    CHECK(ct_profile_parse(text, len, "t", &p, err, sizeof err) == -1);
    CHECK(strcmp(err, "t:65540: more than 65536 bytes rules; merge message-size ranges") == 0);

    len = 0;
    len += (size_t)snprintf(text + len, cap - len, "colltune-profile 1\ncollective bcast\n");
    for (long b = 1; b <= 4097; b++)
        len += (size_t)snprintf(text + len, cap - len, "procs %ld %ld\nbytes 0 0 bcast_as_allgatherv\n", b, b);
    len += (size_t)snprintf(text + len, cap - len, "end\n");
    CHECK(ct_profile_parse(text, len, "t", &p, err, sizeof err) == -1);
    CHECK(strcmp(err, "t:8195: more than 4096 blocks ('procs' and 'nodes'); merge "
                      "communicator-size ranges") == 0);

    /* Over the file size limit: refused before reading a line. */
    size_t huge = (16u << 20) + 1u;
    char *big = malloc(huge);
    memset(big, '#', huge);
    CHECK(ct_profile_parse(big, huge, "t", &p, err, sizeof err) == -1);
    CHECK(strcmp(err, "t:1: larger than 16777216 bytes; a profile is never that big (wrong "
                      "file?)") == 0);
    free(big);
    free(text);
}

int main(void)
{
    test_arguments();
    test_length_bounds();
    test_lookup_large();
    test_hash();
    test_layouts();
    test_limits();
    return unit_check_done("profile_unit");
}

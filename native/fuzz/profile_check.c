/*
 * profile_check: parse tuning profiles with the C core's parser and print what it decided, so
 * that tests can hold the C parser and the Python reader (colltune.profile) to the same files.
 *
 *   profile_check FILE [COLLECTIVE NPROCS|NODESxPPN BYTES]...
 *
 * Prints "ok hash=<16 hex> rules=<n>" and one "lookup COLL P B -> VARIANT|library" line per
 * query, exit 0; or the parser's message after "error: ", exit 1. Usage errors exit 2.
 * COLLECTIVE may name a started form (`allreduce#nonblocking`): its library algorithms are
 * resolved to stand-in ids (every name offered), and the lookup prints the name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_profile.h"

#define CHECK_ID_BASE 1000
static const ct_profile *check_profile;

/* Every name is offered: its stand-in id is CHECK_ID_BASE + its index among the names. */
static int check_find(const char *name)
{
    for (size_t i = 0; i < ct_profile_name_count(check_profile); i++)
        if (strcmp(ct_profile_name(check_profile, i), name) == 0)
            return CHECK_ID_BASE + (int)i;
    return -1;
}

/* A started form's lookup: "allreduce#nonblocking" -> form 1 of allreduce. */
static const char *query_form(const ct_profile *p, const char *coll_name, long nprocs,
                              long long nbytes)
{
    static const char *const suffix[] = {"#nonblocking", "#persistent"};
    char name[128];
    snprintf(name, sizeof name, "%s", coll_name);
    char *hash = strchr(name, '#');
    int form = 0;
    for (int f = 0; f < 2 && hash != NULL; f++)
        if (strcmp(hash, suffix[f]) == 0)
            form = f + 1;
    if (hash != NULL)
        *hash = '\0';
    int v = ct_profile_lookup_form(p, form, colltune_collective_index(name), (int)nprocs,
                                   (int64_t)nbytes);
    return v < 0 ? "library" : ct_profile_name(p, (size_t)(v - CHECK_ID_BASE));
}

/* NPROCS is a communicator size ("4": layout unknown) or a uniform layout ("2x2": 4 processes,
 * 2 nodes x 2 per node). */
static int query(const ct_profile *p, const char *coll_name, const char *procs, const char *bytes)
{
    char *end = NULL;
    long nprocs = strtol(procs, &end, 10), nodes = 0, ppn = 0;
    if (*end == 'x' && end != procs) {
        const char *rest = end + 1;
        nodes = nprocs;
        ppn = strtol(rest, &end, 10);
        if (*rest == '\0' || nodes < 1 || ppn < 1 || nodes > 2147483647L / ppn)
            end = (char *)"x";   /* refused below */
        else
            nprocs = nodes * ppn;
    }
    if (*procs == '\0' || *end != '\0')
        return fprintf(stderr, "profile_check: bad NPROCS '%s'\n", procs), 2;
    long long nbytes = strtoll(bytes, &end, 10);
    if (*bytes == '\0' || *end != '\0')
        return fprintf(stderr, "profile_check: bad BYTES '%s'\n", bytes), 2;
    if (strchr(coll_name, '#') != NULL) {
        printf("lookup %s %s %lld -> %s\n", coll_name, procs, nbytes,
               query_form(p, coll_name, nprocs, nbytes));
        return 0;
    }
    int coll = colltune_collective_index(coll_name);
    int v = ct_profile_lookup_layout(p, coll, (int)nprocs, (int)nodes, (int)ppn, (int64_t)nbytes);
    printf("lookup %s %s %lld -> %s\n", coll_name, procs, nbytes,
           v < 0 ? "library" : colltune_variant_name(v));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc - 2) % 3 != 0) {
        fprintf(stderr, "usage: profile_check FILE [COLLECTIVE NPROCS BYTES]...\n");
        return 2;
    }
    char err[1024];
    ct_profile *p = NULL;
    if (ct_profile_load(argv[1], &p, err, sizeof err) != 0) {
        printf("error: %s\n", err);
        return 1;
    }
    printf("ok hash=%016llx rules=%zu\n", (unsigned long long)ct_profile_hash(p),
           ct_profile_rule_count(p));
    check_profile = p;
    ct_profile_resolve(p, check_find);
    int rc = 0;
    for (int i = 2; i + 2 < argc && rc == 0; i += 3)
        rc = query(p, argv[i], argv[i + 1], argv[i + 2]);
    ct_profile_free(p);
    return rc;
}

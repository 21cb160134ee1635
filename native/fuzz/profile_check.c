/*
 * profile_check: parse tuning profiles with the C core's parser and print what it decided, so
 * that tests can hold the C parser and the Python reader (colltune.profile) to the same files.
 *
 *   profile_check FILE [COLLECTIVE NPROCS|NODESxPPN BYTES]...
 *
 * Prints "ok hash=<16 hex> rules=<n>" and one "lookup COLL P B -> VARIANT|library" line per
 * query, exit 0; or the parser's message after "error: ", exit 1. Usage errors exit 2.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ct_catalog.h"
#include "ct_profile.h"

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
    int rc = 0;
    for (int i = 2; i + 2 < argc && rc == 0; i += 3)
        rc = query(p, argv[i], argv[i + 1], argv[i + 2]);
    ct_profile_free(p);
    return rc;
}

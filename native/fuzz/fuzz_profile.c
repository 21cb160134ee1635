/*
 * libFuzzer target for the tuning-profile parser (ct_profile_parse).
 *
 * Beyond "no crash, no leak, no undefined behaviour" (ASan/UBSan), it checks what the rest of
 * colltune relies on: an accepted profile is rejected nowhere else (parse is deterministic and
 * the hash is stable), every lookup answers -1 or a variant of the asked collective (with and
 * without a communicator layout; layouts that cannot apply answer as layout-free lookups), and a
 * rejected profile always comes with a "name:line: " message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_profile.h"

static const int64_t probe_bytes[] = {0, 1, 7, 8, 1023, 1024, 65536, INT64_C(1) << 40, INT64_MAX};
static const int probe_procs[] = {0, 1, 2, 3, 4, 8, 64, 2147483647};
/* (nodes, ppn) probed with every size: uniform layouts of it, and pairs that do not multiply to
 * it (a caller's mistake: only layout-free rules may answer then). */
static const int probe_layouts[][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 4}, {4, 1}, {2, 4},
                                       {8, 8}, {1, 2147483647}, {2147483647, 1}, {0, 4}, {-1, -4}};

static void check_variant(int v, int coll)
{
    if (v != -1 && (v < 0 || v >= CT_NUM_VARIANTS || colltune_variant_collective(v) != coll))
        abort();
}

/* Every answer is -1 or a variant of the asked collective; a layout that cannot be the
 * communicator's (nodes x ppn != size, or not positive) gets the layout-free answer; a
 * collective without layout blocks answers every layout as it answers "unknown". */
static void check_lookups(const ct_profile *p)
{
    size_t nl = sizeof probe_layouts / sizeof probe_layouts[0];
    for (int coll = -1; coll <= CT_NUM_COLLECTIVES; coll++) {
        int layouts = ct_profile_has_layouts(p, coll);
        if (coll >= 0 && coll < CT_NUM_COLLECTIVES && layouts && !ct_profile_has_layouts(p, -1))
            abort();
        for (size_t i = 0; i < sizeof probe_procs / sizeof probe_procs[0]; i++)
            for (size_t j = 0; j < sizeof probe_bytes / sizeof probe_bytes[0]; j++) {
                int free_v = ct_profile_lookup(p, coll, probe_procs[i], probe_bytes[j]);
                check_variant(free_v, coll);
                for (size_t k = 0; k < nl; k++) {
                    int nodes = probe_layouts[k][0], ppn = probe_layouts[k][1];
                    int v = ct_profile_lookup_layout(p, coll, probe_procs[i], nodes, ppn,
                                                     probe_bytes[j]);
                    check_variant(v, coll);
                    int fits = nodes > 0 && ppn > 0 && (int64_t)nodes * ppn == probe_procs[i];
                    if ((!fits || !layouts) && v != free_v)
                        abort();
                }
            }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    ct_profile *p = NULL;
    int rc = ct_profile_parse((const char *)data, size, "fuzz", &p, err, sizeof err);
    if (rc != 0) {
        if (p != NULL || strncmp(err, "fuzz:", 5) != 0)
            abort();
        return 0;
    }
    check_lookups(p);
    ct_profile *again = NULL;
    if (ct_profile_parse((const char *)data, size, "fuzz", &again, err, sizeof err) != 0 ||
        ct_profile_hash(again) != ct_profile_hash(p) ||
        ct_profile_rule_count(again) != ct_profile_rule_count(p))
        abort();
    ct_profile_free(again);
    ct_profile_free(p);
    return 0;
}

/*
 * libFuzzer target for the selection-table parser (ct_select_parse, docs/select.md).
 *
 * Beyond "no crash, no leak, no undefined behaviour" (ASan/UBSan): a rejected table comes with a
 * "name:line: " message and no table; an accepted one parses again to the same hash, budget and
 * cell budget, and every pick, in every bin of every collective, explored or not, is -1 (the
 * library, only under `unlisted library`) or an index of the collective's portfolio.
 *
 *   native/fuzz/run_select.sh [SECONDS]      (clang, libFuzzer)
 *   gcc -DCT_FUZZ_MAIN ... FILE...            (no libFuzzer: each file once, see main)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ct_catalog.h"
#include "ct_select.h"

static void check_picks(const ct_select *t)
{
    int nbins[3];
    ct_select_nbins(t, nbins);
    for (int coll = 0; coll < CT_NUM_COLLECTIVES; coll++) {
        int size = ct_select_portfolio_size(coll);
        for (int s = 0; s < nbins[0]; s += 1 + nbins[0] / 7)
            for (int n = 0; n < nbins[1]; n++)
                for (int p = 0; p < nbins[2]; p += 1 + nbins[2] / 5)
                    for (uint64_t call = 0; call < 3; call++) {
                        int bins[3] = {s, n, p}, outcome = -1;
                        int m = ct_select_pick(t, coll, bins, call * 77, 5, call, (int)(call & 1),
                                               &outcome);
                        if (m < -1 || m >= size || outcome < CT_PICK_FIXED
                            || outcome > CT_PICK_EXPLORE || (m == -1) != (outcome == CT_PICK_FIXED))
                            abort();
                    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    ct_select *t = NULL;
    if (ct_select_parse((const char *)data, size, "fuzz", &t, err, sizeof err) != 0) {
        if (t != NULL || strncmp(err, "fuzz:", 5) != 0)
            abort();
        return 0;
    }
    check_picks(t);
    ct_select *again = NULL;
    if (ct_select_parse((const char *)data, size, "fuzz", &again, err, sizeof err) != 0
        || ct_select_hash(again) != ct_select_hash(t)
        || ct_select_budget(again) != ct_select_budget(t)
        || ct_select_cell_budget(again) != ct_select_cell_budget(t))
        abort();
    ct_select_free(again);
    ct_select_free(t);
    return 0;
}

#ifdef CT_FUZZ_MAIN
/* Without libFuzzer (gcc): run the target on each file argument and print, per file, "ok HASH"
 * or "error MESSAGE" (tests/test_learn_runtime.py compares these with the Python reader). */
#include <stdio.h>

int main(int argc, char **argv)
{
    static char buf[1 << 20];
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        size_t n = f != NULL ? fread(buf, 1, sizeof buf, f) : 0;
        if (f != NULL)
            fclose(f);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
        char err[512];
        ct_select *t = NULL;
        if (ct_select_parse(buf, n, argv[i], &t, err, sizeof err) == 0)
            printf("ok %016llx\n", (unsigned long long)ct_select_hash(t));
        else
            printf("error %s\n", err);
        ct_select_free(t);
    }
    return 0;
}
#endif

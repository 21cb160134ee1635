/*
 * Counting (COLLTUNE_VERBOSE=1): calls per (collective, mode, variant, outcome).
 *
 * Relaxed C11 atomics: with MPI_THREAD_MULTIPLE several threads count at once, and the totals
 * are read only in MPI_Finalize, when no other thread may call MPI any more.
 *
 * Printed format (stderr, rank 0), one call class per line, whitespace-separated:
 *   colltune: calls on rank 0 of 4: collective mode variant outcome calls
 *   colltune:   bcast  force  bcast_as_scatter_allgather  applied  10
 * mode: none | force | profile | explore | exploit (learning mode: drawn, or best/fixed); variant: the variant the mode chose, or `library`;
 * outcome: applied | not-applicable:<reason> (the library served it) | library |
 * library:<reason> (sent to the library before any decision, e.g. large-count overflow) |
 * redrawn:unproven (learning mode: explored calls whose draw hit this member where it is not
 * proven, drawn again among the proven members; each is also counted where it was served).
 * Then every collective function called, the watched ones too (watch.c: "functions").
 */
#include <stdatomic.h>
#include <stdio.h>

#include "ct_runtime.h"
#include "ct_watch.h"

#define CT_SLOTS (CT_LIB_BASE + CT_LIB_MAX)

static atomic_ullong ct_counts[CT_SLOTS][CT_MODE_COUNT][COLLTUNE_REASON_COUNT];
static atomic_ullong ct_redrawn[CT_SLOTS];

static const char *const ct_mode_names[CT_MODE_COUNT] = {"none", "force", "profile",
                                                           "explore", "exploit"};

void ct_count_decision(int coll, const ct_decision *d)
{
    int slot = d->chosen >= 0 ? d->chosen : CT_NUM_VARIANTS + coll;
    atomic_fetch_add_explicit(&ct_counts[slot][d->mode][d->reason], 1, memory_order_relaxed);
}

void ct_count_redraw(int id)
{
    if (id >= 0 && id < CT_SLOTS)
        atomic_fetch_add_explicit(&ct_redrawn[id], 1, memory_order_relaxed);
}

static void ct_print_slot(FILE *out, int coll, int slot)
{
    int is_library = slot >= CT_NUM_VARIANTS && slot < CT_LIB_BASE;
    const char *variant = is_library ? "library" : ct_member_name(slot);
    for (int m = 0; m < CT_MODE_COUNT; m++) {
        for (int r = 0; r < COLLTUNE_REASON_COUNT; r++) {
            unsigned long long n = atomic_load_explicit(&ct_counts[slot][m][r],
                                                        memory_order_relaxed);
            if (n == 0)
                continue;
            char outcome[64];
            if (r == COLLTUNE_APPLICABLE)
                snprintf(outcome, sizeof outcome, "%s", is_library ? "library" : "applied");
            else
                snprintf(outcome, sizeof outcome, "%s:%s",
                         is_library ? "library" : "not-applicable",
                         colltune_reason_name((colltune_reason)r));
            fprintf(out, "colltune:   %-22s %-8s %-42s %-28s %llu\n",
                    colltune_collective_name(coll), ct_mode_names[m], variant, outcome, n);
        }
    }
    unsigned long long redrawn = atomic_load_explicit(&ct_redrawn[slot], memory_order_relaxed);
    if (redrawn != 0)
        fprintf(out, "colltune:   %-22s %-8s %-42s %-28s %llu\n", colltune_collective_name(coll),
                "explore", variant, "redrawn:unproven", redrawn);
}

static unsigned long long ct_slot_calls(int slot)
{
    unsigned long long n = 0;
    for (int m = 0; m < CT_MODE_COUNT; m++)
        for (int r = 0; r < COLLTUNE_REASON_COUNT; r++)
            n += atomic_load_explicit(&ct_counts[slot][m][r], memory_order_relaxed);
    return n;
}

unsigned long long ct_count_calls(int coll)
{
    unsigned long long n = ct_slot_calls(CT_NUM_VARIANTS + coll);
    for (int v = 0; v < CT_NUM_VARIANTS; v++)
        if (colltune_variant_collective(v) == coll)
            n += ct_slot_calls(v);
    for (int id = CT_LIB_BASE; id < CT_SLOTS; id++)   /* the blocking calls' */
        if (ct_libalg_collective(id) == coll && ct_libalg_form(id) == CT_FORM_BLOCKING)
            n += ct_slot_calls(id);
    return n;
}

void ct_count_print(FILE *out, int rank, int nprocs)
{
    fprintf(out, "colltune: calls on rank %d of %d: collective mode variant outcome calls\n",
            rank, nprocs);
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        ct_print_slot(out, c, CT_NUM_VARIANTS + c);
        for (int v = 0; v < CT_NUM_VARIANTS; v++)
            if (colltune_variant_collective(v) == c)
                ct_print_slot(out, c, v);
        for (int id = CT_LIB_BASE; id < CT_SLOTS; id++)
            if (ct_libalg_collective(id) == c)
                ct_print_slot(out, c, id);
    }
    fprintf(out, "colltune: end of calls\n");
    ct_fn_print(out);
    fflush(out);
}

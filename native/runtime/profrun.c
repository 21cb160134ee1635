/*
 * Profiling mode (COLLTUNE_PROFILE_RUN): its beginning and its end (see ct_profrun.h for what is
 * recorded). At MPI_Init the settings the ranks must agree on and the switches that send calls
 * to the call path (profcall.c); at MPI_Finalize the switches cleared and dir/rank-N written:
 * the environment (profenv.c), the points (profcall.c), the patterns and sampling figures
 * (profcomm.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_profrun_impl.h"
#include "ct_runtime.h"
#include "ct_settings.h"
#include "ct_watch.h"

static char ct_dir[4096];
static int ct_rank_, ct_nprocs_;
static unsigned long ct_every;                    /* sample every N-th call at least, 0: never */
static uint64_t ct_budget_ppm;                    /* agreed sampling budget, 0: none */
static int ct_profrun_wanted;                     /* COLLTUNE_PROFILE_RUN set on this rank */

/* A count setting (COLLTUNE_PROFILE_RUN_SAMPLE, _BUDGET), or -1 if malformed. */
static long ct_count_setting(const char *name, const char *fallback)
{
    const char *text = getenv(name);
    char *end = NULL;
    long n = strtol(text != NULL && text[0] != '\0' ? text : fallback, &end, 10);
    return end == NULL || *end != '\0' || n < 0 ? -1 : n;
}

static long ct_sample_setting(void)
{
    return ct_count_setting(CT_ENV_PROFILE_RUN_SAMPLE, CT_DEFAULT_PROFILE_RUN_SAMPLE);
}

static long ct_budget_setting(void)
{
    return ct_count_setting(CT_ENV_PROFILE_RUN_BUDGET, CT_DEFAULT_PROFILE_RUN_BUDGET);
}

/* MPI_Init, before the settings agreement: this rank's sampling period as {n, ~n} for init.c's
 * one PMPI_Allreduce (n = 0 where profiling is off or the setting is malformed). A barrier
 * inserted on some ranks only would hang, so the ranks must sample alike; no collective of its
 * own here, so a run without profiling pays nothing beyond the agreement it already makes. */
void ct_profrun_prepare(uint64_t slots[CT_PROFRUN_SLOTS])
{
    const char *dir = getenv(CT_ENV_PROFILE_RUN);
    ct_profrun_wanted = dir != NULL && dir[0] != '\0' && strlen(dir) < sizeof ct_dir;
    long n = ct_profrun_wanted ? ct_sample_setting() : 0;
    long budget = ct_profrun_wanted ? ct_budget_setting() : 0;
    if (n < 0 || budget < 0)
        n = 0;   /* warned in ct_profrun_start, on rank 0 only */
    /* profcomm.c's keyval, created before the agreement: a rank that cannot have one offers
     * 0, the ranks then disagree, and nobody samples (rather than a synchronisation on some
     * ranks only). */
    if (!(ct_profrun_wanted && ct_profcomm_prepare()))
        n = 0;
    slots[CT_PR_SAMPLE] = (uint64_t)n;
    slots[CT_PR_SAMPLE_NOT] = ~(uint64_t)n;
    slots[CT_PR_BUDGET] = (uint64_t)(budget > 0 ? budget : 0);
    slots[CT_PR_BUDGET_NOT] = ~slots[CT_PR_BUDGET];
}

/* COLLTUNE_PROFILE_RUN_LIGHT: the calls after which the light path opens (0: never). A
 * malformed value keeps every call on the full path, as `0`, and says so. */
static uint64_t ct_light_setting(int rank)
{
    long n = ct_count_setting(CT_ENV_PROFILE_RUN_LIGHT, CT_DEFAULT_PROFILE_RUN_LIGHT);
    if (n < 0) {
        if (rank == 0)
                ct_message("warning: COLLTUNE_PROFILE_RUN_LIGHT=%s is not a count >= 0; every call "
                       "takes the full path (exact counts at every site)",
                       getenv(CT_ENV_PROFILE_RUN_LIGHT));
        return 0;
    }
    return (uint64_t)n;
}

/* The directory made (with its parents) and tried at MPI_Init: a run of hours should not learn
 * at MPI_Finalize that its profile cannot be written. Every rank tries (EEXIST is fine); a rank
 * that cannot write says so and profiles on (its sampling must stay the same as the others').
 * The parents are made only where the directory's own mkdir says one is missing: each mkdir is a
 * system call that walks the path (OpenFOAM's case directory: 5 of them, ~0.1 ms a rank). */
static void ct_check_dir(int rank)
{
    int made = mkdir(ct_dir, 0777) == 0;
    if (!made && errno == ENOENT) {
        char path[sizeof ct_dir];
        strcpy(path, ct_dir);
        for (char *p = path + 1; *p != '\0'; p++)
            if (*p == '/') {
                *p = '\0';
                mkdir(path, 0777);
                *p = '/';
            }
        made = mkdir(ct_dir, 0777) == 0;
    }
    if (!made && errno != EEXIST) {
        ct_message("warning: COLLTUNE_PROFILE_RUN=%s cannot be made: %s (rank %d's profile will be "
                   "lost at MPI_Finalize; give a writable directory)", ct_dir, strerror(errno), rank);
        return;
    }
    if (!made && access(ct_dir, W_OK | X_OK) != 0)
        ct_message("warning: COLLTUNE_PROFILE_RUN=%s is not writable: %s (rank %d's profile will be "
                   "lost at MPI_Finalize; give a writable directory)", ct_dir, strerror(errno), rank);
}

/* MPI_Init, after the agreement (`agreed` holds the MPI_MAX of every rank's slots): any
 * disagreement turns sampling off everywhere; profiling itself stays on where it was asked. */
void ct_profrun_start(const uint64_t agreed[CT_PROFRUN_SLOTS], int rank, int nprocs)
{
    if (!ct_profrun_wanted)
        return;   /* the agreement still ran: ranks with profiling on saw this rank's 0 */
    const char *dir = getenv(CT_ENV_PROFILE_RUN);
    uint64_t every = agreed[CT_PR_SAMPLE];
    if (rank == 0 && ct_sample_setting() < 0)
        ct_message("warning: COLLTUNE_PROFILE_RUN_SAMPLE=%s is not a count >= 0; no calls are "
                   "sampled", getenv(CT_ENV_PROFILE_RUN_SAMPLE));
    if (rank == 0 && ct_budget_setting() < 0)
        ct_message("warning: COLLTUNE_PROFILE_RUN_BUDGET=%s is not a count >= 0 (millionths of "
                   "the run); no calls are sampled", getenv(CT_ENV_PROFILE_RUN_BUDGET));
    if (agreed[CT_PR_SAMPLE] != ~agreed[CT_PR_SAMPLE_NOT]
        || agreed[CT_PR_BUDGET] != ~agreed[CT_PR_BUDGET_NOT]) {
        if (rank == 0)
            ct_message("warning: COLLTUNE_PROFILE_RUN, COLLTUNE_PROFILE_RUN_SAMPLE or "
                       "COLLTUNE_PROFILE_RUN_BUDGET differ across ranks; no calls are sampled "
                       "(give all ranks the same settings)");
        every = 0;
    }
    ct_every = (unsigned long)every;
    ct_budget_ppm = agreed[CT_PR_BUDGET];
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    ct_profrun_mt = level == MPI_THREAD_MULTIPLE;
    strcpy(ct_dir, dir);
    ct_check_dir(rank);
    ct_rank_ = rank;
    ct_nprocs_ = nprocs;
    ct_profenv_read_maps();
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        ct_profrun_by_modes[c] = ct_active[c];
        ct_active[c] = 1;
    }
    ct_profrun_on = 1;
    ct_p2p_on = 1;
    ct_watch |= CT_WATCH_SEE;   /* the watched functions and their requests (watch.c) */
    if (!ct_profrun_mt)
        ct_watch |= CT_WATCH_MEMO;   /* (ct_watch.h) */
    ct_polls_watch_written();   /* (shut until the polls' light path opens, just below) */
    ct_profrun_polls_start(ct_light_setting(rank));
    ct_profrun_clock_start();
    ct_profcomm_start(every, agreed[CT_PR_BUDGET], ct_profrun_ns_init);
}

/* ---- MPI_Finalize: environment and tables to dir/rank-N -------------------------------------- */

/* Ticks to nanoseconds at the run's own rate (ct_profrun_ns_per_tick at MPI_Finalize). */
static unsigned long long ct_ns(unsigned long long ticks, double ns_per_tick)
{
    return (unsigned long long)((double)ticks * ns_per_tick + 0.5);
}

/* A collective point's name: its collective, barrier, or a watched function (iallreduce). */
static const char *ct_kind_name(int kind)
{
    if (kind >= CT_PR_FN_BASE)
        return ct_fns[kind - CT_PR_FN_BASE].name;
    return colltune_collective_name(kind);
}

/* The request line of a nonblocking or persistent function's point (formats.toml). */
static void ct_write_requests(FILE *out, ct_point *s, double rate)
{
    unsigned long long starts = atomic_load(&s->req_starts), done = atomic_load(&s->req_done);
    if (starts == 0 && done == 0)
        return;
    _Static_assert(CT_PROFRUN_REQUEST_FIELDS == 8, "formats.toml's request line: update the writer");
    fprintf(out, "request " CT_PROFRUN_REQUEST_FORMAT "\n", ct_kind_name(s->key.kind), s->key.site,
            s->key.nprocs, s->key.bin, starts, done, ct_ns(atomic_load(&s->req_wait_ns), rate),
            ct_ns(atomic_load(&s->req_span_ns), rate));
}

/* The claimed entries only, in the order they were claimed. */
static void ct_write_slots(FILE *out, ct_point *table, ct_table *cells, int coll, double rate)
{
    size_t n = ct_table_used(cells);
    for (size_t i = 0; i < n; i++) {
        ct_point *s = &table[i];
        if (atomic_load(&s->state) != 2 || atomic_load(&s->calls) == 0)
            continue;
        unsigned long long samples = atomic_load(&s->samples);
        unsigned long long calls = atomic_load(&s->calls);
        const ct_point_key *k = &s->key;
        _Static_assert(CT_PROFRUN_POINT_FIELDS == 15, "formats.toml's point line: update the writer");
        fprintf(out, "%s " CT_PROFRUN_POINT_FORMAT "\n", coll ? "coll" : "p2p",
                !coll ? ct_p2p_names[k->kind] : ct_kind_name(k->kind),
                k->site, k->nprocs, k->bin, calls, atomic_load(&s->timed),
                ct_ns(atomic_load(&s->timed_ns), rate), ct_ns(atomic_load(&s->max_ns), rate),
                atomic_load(&s->bytes), samples, ct_ns(atomic_load(&s->sample_own_ns), rate),
                ct_ns(atomic_load(&s->sample_wait_ns), rate),
                samples ? ct_ns(~atomic_load(&s->sample_wait_min_not), rate) : 0ull,
                ~atomic_load(&s->bytes_min_not), atomic_load(&s->bytes_max));
        if (coll)
            ct_write_requests(out, s, rate);
        unsigned long long polls = atomic_load(&s->polls);
        if (polls == 0)
            continue;
        if (!coll && (k->kind == CT_P2P_TEST || k->kind == CT_P2P_TESTALL || k->kind == CT_P2P_TESTANY
                      || k->kind == CT_P2P_TESTSOME))
            fprintf(out, "polled %s %p %llu\n", ct_p2p_names[k->kind], k->site, polls);
        else   /* a light function's sample (requests.c): the point's key, then its part */
            fprintf(out, "sampled %s %s %p %d %d %llu\n", coll ? "coll" : "p2p",
                    !coll ? ct_p2p_names[k->kind] : ct_kind_name(k->kind), k->site, k->nprocs,
                    k->bin, polls);
    }
}

/* The lost line and the point lines. */
static void ct_write_points(FILE *out, double ns_per_tick)
{
    fprintf(out, "lost %llu %llu\n", (unsigned long long)atomic_load(&ct_coll_lost),
            (unsigned long long)atomic_load(&ct_p2p_lost));
    fprintf(out, "memo_made %llu %llu %llu\n",
            (unsigned long long)atomic_load(&ct_memo_made[CT_MEMO_COLL]),
            (unsigned long long)atomic_load(&ct_memo_made[CT_MEMO_P2P]),
            (unsigned long long)atomic_load(&ct_memo_made[CT_MEMO_POLL]));
    ct_write_slots(out, ct_coll_slots, &ct_coll_table, 1, ns_per_tick);
    ct_write_slots(out, ct_p2p_slots, &ct_p2p_table, 0, ns_per_tick);
    ct_profrun_polls_write(out);
}

void ct_profrun_finish(void)
{
    if (!ct_profrun_on)
        return;
    uint64_t wall = ct_profrun_ns() - ct_profrun_ns_init;
    double ns_per_tick = ct_profrun_ns_per_tick();   /* the run's own rate */
    ct_profrun_on = 0;
    ct_watch &= (unsigned char)~CT_WATCH_MEMO;
    ct_p2p_on = 0;
    ct_profrun_polls_finish();
    ct_polls_watch_written();
    ct_profcall_finish();
    ct_profcomm_finish();
    ct_profchain_finish();
    char path[sizeof ct_dir + 32], tmp[sizeof ct_dir + 48];
    snprintf(path, sizeof path, "%s/rank-%d", ct_dir, ct_rank_);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "w");
    if (out == NULL) {
        ct_message("warning: COLLTUNE_PROFILE_RUN: cannot write %s: %s (rank %d's profile is "
                   "lost; give a writable directory)", tmp, strerror(errno), ct_rank_);
        return;
    }
    ct_profenv_write(out, ct_rank_, ct_nprocs_, wall, ct_every, ct_budget_ppm);
    ct_write_points(out, ns_per_tick);
    ct_profcomm_write(out, ns_per_tick);
    ct_profchain_write(out);
    fprintf(out, "end\n");
    if (fclose(out) != 0 || rename(tmp, path) != 0)
        ct_message("warning: COLLTUNE_PROFILE_RUN: cannot write %s: %s", path, strerror(errno));
}

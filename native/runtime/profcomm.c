/*
 * Profiling mode, per communicator (see ct_profrun_impl.h): the sampling schedule with its time
 * budget, and the call patterns one call could replace. The call path (profcall.c) calls in here;
 * nothing here calls back: what a call is (its kind, site, number) comes as arguments.
 *
 * State: one small struct per communicator, found through a keyval attribute (allocated at the
 * communicator's first profiled call, freed by the attribute's delete callback) and cached per
 * thread for the last communicator used, so that the common case (one communicator, many calls)
 * makes no MPI query at all. A generation counter bumped by the delete callback invalidates the
 * caches: a freed communicator's handle may be reused by the next one created.
 *
 * Sampling: call numbers on a communicator are the same on every rank (collectives on it are
 * called in the same order everywhere), and so is the schedule derived from them: the second
 * call, then on average every `period`-th (ct_profcomm_gap). A sampled call is preceded by a
 * timed synchronisation; on an intra-communicator that is a PMPI_Allreduce (MPI_MAX) of each
 * rank's budget level, so every rank learns the largest one at the same call and all change the
 * period alike: doubled when a rank's sampling cost reaches COLLTUNE_PROFILE_RUN_BUDGET
 * (millionths of its time since MPI_Init), halved (not below COLLTUNE_PROFILE_RUN_SAMPLE) when
 * every rank is under half of it (level 0 or 1 in quarters). The cost of a synchronisation is
 * its latency, not the wait for late ranks (that
 * moved from the collective, it is no extra cost): the last rank to arrive waits for nobody, so
 * the shortest duration over the ranks is the latency. The same Allreduce carries it (as
 * UINT_MAX - duration of the previous synchronisation on the communicator, under MPI_MAX), so
 * every rank adds the same figure to its cost. Inter-communicators synchronise with PMPI_Barrier
 * at a fixed period (an Allreduce there returns the other group's values).
 *
 * Patterns (advice for the source, never applied): each communicator keeps a fingerprint of its
 * previous collective call; every intercepted call takes a number from a per-thread sequence
 * (collectives, MPI_Barrier and the point-to-point calls of p2p.toml), so "directly after" means
 * no intercepted call in between on that thread.
 */
#include "ct_tls.h"
#include <limits.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ct_formats.h"
#include "ct_profrun_impl.h"
#include "ct_runtime.h"

#define CT_LEVEL_OVER 4u                /* levels in quarters of the budget */
/* A run's first samples are allowed as if it had already run this long (without an allowance
 * every run's first samples would be over budget). A fixed 1 ms was ~40% of OpenFOAM's budget
 * and set its own account whatever the budget below 1000 ppm (benchmarks/advise/README.md,
 * "twenty-fourth round"). */
#define CT_BUDGET_HEAD_START_NS 250000000u
#define CT_MAX_PERIOD (1u << 20)
#define CT_SMALL_BYTES 4096     /* "small" reduction: latency-bound on any network */
#define CT_PAT_SLOTS 256
_Static_assert((CT_PAT_SLOTS & (CT_PAT_SLOTS - 1)) == 0, "a power of two (ct_table_probe)");

static const char *const ct_pattern_names[CT_PAT_COUNT] = {
    [CT_PAT_REDUCE_BCAST] = "reduce_bcast",
    [CT_PAT_SMALL_REDUCTIONS] = "small_reductions",
    [CT_PAT_BARRIER_SYNC] = "barrier_before_sync",
};

CT_HIDDEN _Thread_local ct_pcomm_cache ct_profcomm_cache = {MPI_COMM_NULL, NULL, 0};
CT_HIDDEN CT_HOT_DATA atomic_uint ct_profcomm_generation;
static int ct_keyval = MPI_KEYVAL_INVALID;
static uint64_t ct_every;                       /* agreed minimum period, 0: no sampling */
static uint64_t ct_budget_ppm;                  /* agreed, 0: no budget */
static uint64_t ct_ns0;                         /* MPI_Init, CLOCK_MONOTONIC ns */
/* Synchronisations made, and the agreed latencies learned (sum and how many): see top. */
static atomic_ullong ct_syncs, ct_latency_ns, ct_latencies;   /* latencies in ticks */
CT_HIDDEN atomic_ullong ct_own_ticks;           /* the call path's own time (ct_own_add) */
static atomic_ullong ct_widened, ct_narrowed;   /* the period's changes, every communicator */
static ct_pat_slot ct_pat_slots[CT_PAT_SLOTS];
static atomic_uint ct_pat_cells[CT_PAT_SLOTS];
static ct_table ct_pat_table = {0, ct_pat_cells};
/* the slot this thread counted last */
static _Thread_local ct_pat_slot *ct_pat_last CT_TLS_MODEL;
static atomic_ullong ct_pat_lost;

static int ct_state_free(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    atomic_fetch_add_explicit(&ct_profcomm_generation, 1, memory_order_relaxed);
    if (!ct_profrun_mt && ct_coll_line.state == value) {   /* (the wrappers' light path's) */
        ct_coll_line_flush();
        ct_coll_line.comm = MPI_COMM_NULL;
        ct_coll_line.state = NULL;
    }
    free(value);
    return MPI_SUCCESS;
}

int ct_profcomm_prepare(void)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ct_state_free, &ct_keyval, NULL)
           == MPI_SUCCESS;
}

void ct_profcomm_start(uint64_t every, uint64_t budget_ppm, uint64_t ns0)
{
    ct_every = every;
    ct_budget_ppm = budget_ppm;
    ct_ns0 = ns0;
}

void ct_profcomm_finish(void)
{
    ct_profcomm_cache.comm = MPI_COMM_NULL;
    if (ct_coll_line.state != NULL)
        ct_coll_line_flush();
    ct_coll_line.comm = MPI_COMM_NULL;
    ct_coll_line.state = NULL;
    if (ct_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&ct_keyval);
}

static ct_pcomm *ct_state_new(MPI_Comm comm)
{
    ct_pcomm *st = aligned_alloc(_Alignof(ct_pcomm), sizeof *st);
    if (st == NULL)
        return NULL;
    memset(st, 0, sizeof *st);
    int inter = 0;
    if (PMPI_Comm_size(comm, &st->nprocs) != MPI_SUCCESS
        || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS
        || PMPI_Comm_rank(comm, &st->rank) != MPI_SUCCESS
        || PMPI_Comm_set_attr(comm, ct_keyval, st) != MPI_SUCCESS) {
        free(st);
        return NULL;
    }
    st->inter = (int16_t)(inter != 0);
    st->follow_lead = -1;
    /* the second call (the first may carry the library's lazy setup); never without sampling */
    st->next_sample = ct_every != 0 ? 1 : UINT64_MAX;
    st->period = ct_every;
    return st;
}

ct_pcomm *ct_profcomm_lookup(MPI_Comm comm)
{
    unsigned gen = atomic_load_explicit(&ct_profcomm_generation, memory_order_relaxed);
    if (comm == MPI_COMM_NULL || ct_keyval == MPI_KEYVAL_INVALID)
        return NULL;
    void *value;
    int found;
    if (PMPI_Comm_get_attr(comm, ct_keyval, &value, &found) != MPI_SUCCESS)
        return NULL;
    ct_pcomm *st = found ? value : ct_state_new(comm);
    if (st != NULL)
        ct_profcomm_cache = (ct_pcomm_cache){comm, st, gen};
    return st;
}

/* The profiling run's own time so far on this rank, in ticks: its call path's (measured,
 * ct_own_add) and every synchronisation at the mean latency learned. */
static double ct_own_cost(void)
{
    double cost = (double)atomic_load_explicit(&ct_own_ticks, memory_order_relaxed);
    uint64_t n = atomic_load_explicit(&ct_latencies, memory_order_relaxed);
    if (n > 0)
        cost += (double)atomic_load_explicit(&ct_latency_ns, memory_order_relaxed) / (double)n
                * (double)atomic_load_explicit(&ct_syncs, memory_order_relaxed);
    return cost;
}

/* This rank's profiling cost in quarters of its budget (capped): the whole own time, point-to-
 * point calls included (on a code with more point-to-point than collective calls, the
 * synchronisations alone stayed under the fixed allowance and the period never widened while the
 * run paid several times its budget). Only the sampling can be shed (the period, and with it the
 * synchronisations), the counting of every call cannot: the file says what it cost. Ticks of the
 * call path against a budget in nanoseconds since MPI_Init. */
static unsigned ct_level(void)
{
    if (ct_budget_ppm == 0)   /* no budget (never over it); the budget below is never 0 else */
        return 0;
    uint64_t budget = (ct_profrun_ns() - ct_ns0 + CT_BUDGET_HEAD_START_NS) / 1000000u * ct_budget_ppm;
    double level = ct_own_cost() * ct_profrun_ns_per_tick() * CT_LEVEL_OVER / (double)budget;
    return level > 255 ? 255u : (unsigned)level;
}

/* A code that polls far more than it synchronises (HPCC's RandomAccess: 2.2 M polls between two
 * of its 13 synchronisations) would go on sampling polls long after its budget ran out: their
 * sample asks here too, without any other rank (the polls' period is this rank's own). */
int ct_profcomm_over_budget(void)
{
    return ct_level() >= CT_LEVEL_OVER;
}

static void ct_adapt(ct_pcomm *st, const unsigned agreed[2])
{
    if (st->last_sync_ns != 0) {
        atomic_fetch_add_explicit(&ct_latency_ns, UINT_MAX - agreed[1], memory_order_relaxed);
        atomic_fetch_add_explicit(&ct_latencies, 1, memory_order_relaxed);
    }
    if (ct_budget_ppm == 0)
        return;
    /* Levels are whole quarters, rounded down: level 4 is 100-124% of the budget, which `> 4`
     * let through (a run could spend a quarter more than its budget and never widen). */
    if (agreed[0] >= CT_LEVEL_OVER) {
        ct_profrun_polls_over_budget();   /* (the polls' period: this rank's, requests.c) */
        if (st->period < CT_MAX_PERIOD) {
            st->period *= 2;
            atomic_fetch_add_explicit(&ct_widened, 1, memory_order_relaxed);
        }
    } else if (agreed[0] <= 1 && st->period / 2 >= ct_every) {
        st->period /= 2;
        atomic_fetch_add_explicit(&ct_narrowed, 1, memory_order_relaxed);
    }
}

/* Calls from one sampled call to the next: `period` on average, jittered by a hash of the
 * sample's number on the communicator (the same on every rank), so that the schedule never locks
 * onto a cycle of the application's calls: ExaML alternates Reduce and Bcast, and any even period
 * would sample only one of them. */
uint64_t ct_profcomm_gap(uint64_t period, uint64_t k)
{
    if (period <= 1)
        return 1;
    uint64_t z = k + 0x9E3779B97F4A7C15ull;   /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return period / 2 + z % (period + 1);   /* period / 2 .. 3 period / 2 */
}

int ct_profcomm_sync(ct_pcomm *st, MPI_Comm comm, uint64_t *wait_ns)
{
    uint64_t n = st->calls - 1;   /* ct_profcomm_due counted it */
    uint64_t t0 = ct_profrun_ticks();
    unsigned mine[2] = {ct_level(), UINT_MAX - (unsigned)(st->last_sync_ns < UINT_MAX
                                                            ? st->last_sync_ns : UINT_MAX - 1)};
    unsigned agreed[2] = {0, 0};
    /* The library's blocking call, which polls while this rank waits for late ranks: that wait
     * moved here from the collective, which would have polled for it. A nonblocking one tested
     * with sched_yield between tests polled less (5,473 against 7,847 instructions a sample,
     * callgrind) but progressed only inside the tests, a yield per step of its schedule on every
     * rank: its latency was 2-160 us against 0.6-1.9 us, a run 1.3-6x longer on a loaded node
     * (benchmarks/advise/README.md, "The sampling synchronisation"). */
    int ok = st->inter ? PMPI_Barrier(comm) == MPI_SUCCESS
                       : PMPI_Allreduce(mine, agreed, 2, MPI_UNSIGNED, MPI_MAX, comm) == MPI_SUCCESS;
    uint64_t wait = ct_profrun_ticks() - t0;
    if ((int64_t)wait < 0)
        wait = 0;
    if (!ok) {
        /* Not expected on a valid communicator. Every rank got the same error class in the
         * same call (collective semantics), so stopping here is agreed too. */
        st->next_sample = UINT64_MAX;
        return 0;
    }
    atomic_fetch_add_explicit(&ct_syncs, 1, memory_order_relaxed);
    if (!st->inter)
        ct_adapt(st, agreed);
    st->last_sync_ns = wait > 0 ? wait : 1;
    st->next_sample = n + ct_profcomm_gap(st->period, st->samples++);
    *wait_ns = wait;
    return 1;
}

/* ---- patterns ---------------------------------------------------------------------------- */

void ct_pat_sampled(ct_pat_slot *s, uint64_t bytes, int lead)
{
    /* below MPI_THREAD_MULTIPLE only (the light path): plain counters */
    s->sampled++;
    s->sampled_bytes += bytes;
    s->lead = lead;
}

void ct_profcomm_light_halve(int lead, uint64_t most, uint64_t (*halve)(uint64_t n))
{
    for (size_t i = 0, used = ct_table_used(&ct_pat_table); i < used; i++) {
        ct_pat_slot *s = &ct_pat_slots[i];
        if (s->sampled == 0 || s->lead != lead || atomic_load_explicit(&s->state, memory_order_relaxed) != 2)
            continue;
        /* a dropped pair stays counted in the pattern's pairs, out of the sample (as a dropped
         * point sample stays in its point's calls); its bytes, those of one bin, in proportion.
         * Halved apart from the points' samples, so capped at what they kept: a pair's first
         * call is one of them. */
        uint64_t kept = halve(s->sampled);
        if (kept > most)
            kept = most;
        s->sampled_bytes = (uint64_t)((double)s->sampled_bytes * (double)kept / (double)s->sampled);
        s->sampled = kept;
    }
}

void ct_pat_bump(ct_pat_slot *s, uint64_t pairs, uint64_t bytes)
{
    if (ct_profrun_mt) {
        atomic_fetch_add_explicit(&s->count, pairs, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->bytes, bytes, memory_order_relaxed);
    } else {   /* one thread at a time calls MPI: no locked instruction needed */
        atomic_store_explicit(&s->count, atomic_load_explicit(&s->count, memory_order_relaxed) + pairs,
                              memory_order_relaxed);
        atomic_store_explicit(&s->bytes, atomic_load_explicit(&s->bytes, memory_order_relaxed) + bytes,
                              memory_order_relaxed);
    }
}

/* The counter of a pattern at (first, second, communicator size, bin of `bytes`); NULL (and
 * counted as lost) when the table is full. */
static ct_pat_slot *ct_pat_slot_of(int pattern, const void *first, const void *second,
                                   int nprocs, int64_t bytes)
{
    ct_pat_key key = {first, second, pattern, nprocs,
                      bytes <= 0 ? -1 : 63 - __builtin_clzll((unsigned long long)bytes), 0};
    ct_pat_slot *s = ct_pat_last;   /* a loop repeats one pattern: skip the hash */
    if (s == NULL || memcmp(&s->key, &key, sizeof key) != 0) {
        uint64_t h = ((uint64_t)(uintptr_t)first * 31u + (uint64_t)(uintptr_t)second)
                     * 0x9E3779B97F4A7C15ull ^ (uint64_t)pattern << 8 ^ (uint64_t)(key.bin + 1);
        h ^= h >> 29;
        s = ct_table_probe(ct_pat_slots, &ct_pat_table, CT_PAT_SLOTS, sizeof *ct_pat_slots, h,
                           offsetof(ct_pat_slot, key), &key, sizeof key);
        if (s == NULL) {
            atomic_fetch_add_explicit(&ct_pat_lost, 1, memory_order_relaxed);
            return NULL;
        }
        ct_pat_last = s;
    }
    return s;
}

static int ct_synchronising(int kind)
{
    return kind == CT_COLL_ALLREDUCE || kind == CT_COLL_ALLGATHER || kind == CT_COLL_ALLTOALL
           || kind == CT_COLL_REDUCE_SCATTER || kind == CT_COLL_REDUCE_SCATTER_BLOCK
           || kind == CT_PR_BARRIER;
}

static void ct_fingerprint_of(ct_fingerprint *f, const ct_pcomm *st, int kind,
                              const void *site, const ct_call *call, int64_t bytes)
{
    f->site = site;
    f->kind = kind;
    f->bytes = bytes;
    f->in = f->out = NULL;
    if (call == NULL) {
        f->root = -1;
        f->count = 0;
        f->type = MPI_DATATYPE_NULL;
        f->op = MPI_OP_NULL;
        return;
    }
    f->root = call->root;
    f->count = call->recvcount;
    f->type = call->recvtype;
    f->op = call->op;
    ct_fingerprint_buffers(f, st, kind, call);
}

/* The pattern `cur`, made directly after `prev` on the same communicator, makes with it by all
 * but their buffers (-1: none); at most one can (each wants another kind of second call). */
static int ct_pattern_shape(const ct_fingerprint *prev, const ct_fingerprint *cur)
{
    if (prev->kind == CT_COLL_REDUCE && cur->kind == CT_COLL_BCAST && prev->root == cur->root
        && prev->count == cur->count && prev->type == cur->type)
        return CT_PAT_REDUCE_BCAST;
    if ((cur->kind == CT_COLL_ALLREDUCE || cur->kind == CT_COLL_REDUCE)
        && prev->kind == cur->kind && prev->root == cur->root && prev->op == cur->op
        && prev->type == cur->type && prev->bytes > 0 && prev->bytes <= CT_SMALL_BYTES
        && cur->bytes > 0 && cur->bytes <= CT_SMALL_BYTES)
        return CT_PAT_SMALL_REDUCTIONS;
    if (prev->kind == CT_PR_BARRIER && ct_synchronising(cur->kind))
        return CT_PAT_BARRIER_SYNC;
    return -1;
}

/* ... and by their buffers: the broadcast sends the reduce's result (at the root, the only rank
 * that has it); the second reduction does not read the first's result. */
/* A new id for a rewritten fingerprint: process-wide, so that one rewritten by another thread
 * is never taken for the one a communicator's state still points at. */
static uint64_t ct_new_id(void)
{
    static atomic_ullong ids;
    return atomic_fetch_add_explicit(&ids, 1, memory_order_relaxed) + 1;
}

void ct_profcomm_pattern(ct_pcomm *st, const ct_fingerprint *fp, ct_pat_memo *pm,
                         int64_t bytes)
{
    pm->pattern = ct_pattern_shape(st->prev, fp);
    pm->slot = pm->pattern >= 0
                   ? ct_pat_slot_of(pm->pattern, st->prev->site, fp->site, st->nprocs, bytes)
                   : NULL;
    if (pm->slot == NULL)
        pm->pattern = -1;   /* table full: counted as lost once */
    pm->after = st->prev_id;
}

void ct_profcomm_after(ct_pcomm *st, ct_fingerprint *fp, uint64_t *idp, ct_pat_memo *pm,
                       int kind, const void *site, const ct_call *call, int64_t bytes,
                       uint64_t seq)
{
    /* compared before it is stored: *fp may hold the previous call (its memo entry reused) */
    ct_fingerprint cur;
    ct_fingerprint_of(&cur, st, kind, site, call, bytes);
    ct_pat_memo local;
    if (pm == NULL)
        pm = &local;
    *pm = (ct_pat_memo){0, NULL, -1};
    if (ct_profcomm_paired(st, seq)) {
        ct_profcomm_pattern(st, &cur, pm, bytes);
        if (pm->pattern >= 0 && ct_profcomm_buffers_fit(st, pm->pattern, st->prev, &cur, cur.root)) {
            ct_pat_bump(pm->slot, 1, (uint64_t)bytes);
            if (st->follow_lead >= 0)
                ct_pat_sampled(pm->slot, (uint64_t)bytes, st->follow_lead);
        }
    }
    if (fp == NULL) {
        fp = &st->own;
        idp = &st->own_id;
    }
    *fp = cur;
    *idp = ct_new_id();
    st->prev = fp;
    st->prev_idp = idp;
    st->prev_id = *idp;
    st->prev_seq = seq;
}

void ct_profcomm_write(FILE *out, double ns_per_tick)
{
    for (size_t i = 0, used = ct_table_used(&ct_pat_table); i < used; i++) {
        ct_pat_slot *s = &ct_pat_slots[i];
        if (atomic_load(&s->state) != 2 || atomic_load(&s->count) == 0)
            continue;
        const ct_pat_key *k = &s->key;
        _Static_assert(CT_PROFRUN_PATTERN_FIELDS == 7, "formats.toml's pattern line: update the writer");
        fprintf(out, "pattern " CT_PROFRUN_PATTERN_FORMAT "\n", ct_pattern_names[k->pattern], k->first,
                k->second, k->nprocs, k->bin, atomic_load(&s->count), atomic_load(&s->bytes));
        if (s->sampled > 0)   /* (the lead: a collective's light id) */
            fprintf(out, "pattern_sampled %s %p %p %d %d %llu %llu %s\n", ct_pattern_names[k->pattern],
                    k->first, k->second, k->nprocs, k->bin, (unsigned long long)s->sampled,
                    (unsigned long long)s->sampled_bytes,
                    colltune_collective_name(s->lead - CT_LIGHT_COLL));
    }
    fprintf(out, "patterns_lost %llu\nsample_syncs %llu %llu %llu\n", atomic_load(&ct_pat_lost),
            atomic_load(&ct_syncs),
            (unsigned long long)((double)atomic_load(&ct_latency_ns) * ns_per_tick + 0.5),
            atomic_load(&ct_latencies));
    fprintf(out, "own_cost %llu %llu %llu\n", (unsigned long long)(ct_own_cost() * ns_per_tick + 0.5),
            atomic_load(&ct_widened), atomic_load(&ct_narrowed));
}

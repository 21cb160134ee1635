/*
 * The profiling mode's inside (see ct_profrun.h), private to its files: the fixed tables; per
 * communicator (profcomm.c) the sampling schedule with its budget and the call patterns, as the
 * call path (profcall.c) uses them; and what MPI_Finalize (profrun.c) asks of both.
 */
#ifndef CT_PROFRUN_IMPL_H
#define CT_PROFRUN_IMPL_H

#include "ct_tls.h"
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "ct_profrun.h"
#include "ct_runtime.h"   /* ct_call, the collectives' ids: the fingerprint inline below */

/* ---- hashed tables of dense entries (profcall.c's points, profchain.c's chains, profcomm.c's
 * patterns) -------------------------------------------------------------------------------- */
/* An entry is `atomic_int state` (0 empty, 2 ready) and, `key_at` bytes in, its key of
 * `key_bytes` (a struct without padding: compared and copied as bytes); every other field starts
 * at zero. The hash picks a cell of `cells` (n, a power of two, open addressing); a cell holds
 * its entry's index + 1, and the entries are handed out densely in the order they are claimed
 * (entries 0 .. used - 1 of an array of n). Dense because each entry is a page fault the first
 * time it is read and one more when it is written: a key hashed straight to a slot of a sparse
 * table faulted in a page of its own, 130 points and 133 chains of an OpenFOAM rank ~500 faults
 * (1-3 us each in a VM), and a reader of every entry (the polls' widening, MPI_Finalize's writer)
 * faulted in the whole table; now the cells' few pages and one page per ~25 entries. */
#define CT_CELL_BUSY UINT32_MAX   /* a cell being claimed: its entry's key not yet written */
typedef struct ct_table {
    atomic_uint used;                 /* entries claimed (each cell claims one: at most n) */
    atomic_uint *cells;               /* n: 0 empty, CT_CELL_BUSY, else the entry's index + 1 */
} ct_table;

/* The entry of `key` in `table` (n entries of `stride` bytes, cells in `t`), probing from hash
 * `h`: an empty cell is claimed by CAS, its entry gets the key before the cell is published; a
 * cell being claimed by another thread is waited for (a few stores). NULL when the table is
 * full. No lock: MPI_THREAD_MULTIPLE safe. Inline: the sizes are constants. */
static inline void *ct_table_probe(void *table, ct_table *t, size_t n, size_t stride, uint64_t h,
                                   size_t key_at, const void *key, size_t key_bytes)
{
    for (size_t probe = 0; probe < n; probe++) {
        atomic_uint *cell = &t->cells[(h + probe) & (n - 1)];
        unsigned c = atomic_load_explicit(cell, memory_order_acquire);
        if (c == 0) {
            unsigned expected = 0;
            if (atomic_compare_exchange_strong_explicit(cell, &expected, CT_CELL_BUSY,
                                                        memory_order_acquire, memory_order_relaxed)) {
                unsigned i = atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed);
                char *entry = (char *)table + (size_t)i * stride;
                memcpy(entry + key_at, key, key_bytes);
                /* ready for the readers of entries 0 .. used - 1 (ct_table_used), then found */
                atomic_store_explicit((atomic_int *)entry, 2, memory_order_release);
                atomic_store_explicit(cell, i + 1, memory_order_release);
                return entry;
            }
            c = expected;
        }
        while (c == CT_CELL_BUSY)
            c = atomic_load_explicit(cell, memory_order_acquire);
        char *entry = (char *)table + (size_t)(c - 1) * stride;
        if (memcmp(entry + key_at, key, key_bytes) == 0)
            return entry;
    }
    return NULL;
}

/* How many entries a reader of the whole table reads (0 .. this - 1, in claim order); an entry
 * whose state is not 2 is still being claimed by another thread (skip it). */
static inline size_t ct_table_used(ct_table *t)
{
    return atomic_load_explicit(&t->used, memory_order_acquire);
}

/* ---- the points (profcall.c counts into them, profrun.c writes them at MPI_Finalize) ------- */
#define CT_COLL_SLOTS 4096
#define CT_P2P_SLOTS 1024
#define CT_PR_BARRIER CT_COLL_BARRIER      /* MPI_Barrier: a collective of the table */
#define CT_PR_FN_BASE CT_NUM_COLLECTIVES   /* + ct_fn_id: a watched function (watch.c) */
_Static_assert((CT_COLL_SLOTS & (CT_COLL_SLOTS - 1)) == 0 && (CT_P2P_SLOTS & (CT_P2P_SLOTS - 1)) == 0,
               "powers of two (ct_table_probe)");

/* One (collective or p2p call, site, communicator size, log2 bytes) point. No padding: the
 * key is compared and copied as bytes (ct_table_probe). */
typedef struct ct_point_key {
    const void *site;
    int kind;                         /* ct_coll_id, CT_PR_BARRIER, CT_PR_FN_BASE + ct_fn_id
                                         or ct_p2p_call */
    int nprocs;                       /* communicator size (0 for p2p) */
    int bin;                          /* floor(log2(bytes)), -1 for 0 bytes */
    int zero;
} ct_point_key;
_Static_assert(sizeof(ct_point_key) == sizeof(void *) + 4 * sizeof(int), "no padding");

/* Minima are kept as their bitwise complement under a maximum, so that a zeroed slot means "none
 * yet" and a claimed slot needs nothing but its key. Durations in ticks (ct_profrun_ticks). */
typedef struct ct_point {
    atomic_int state;                 /* 0 empty, 2 ready (ct_table_probe) */
    ct_point_key key;
    atomic_ullong calls, bytes, bytes_min_not, bytes_max;
    atomic_ullong timed, timed_ns, max_ns;   /* the calls whose time was taken */
    atomic_ullong samples, sample_own_ns, sample_wait_ns, sample_wait_min_not;
    /* a nonblocking or persistent function's requests (requests.c): the `request` line */
    atomic_ullong req_starts, req_done, req_wait_ns, req_span_ns;
    /* a Test-family point: its calls that are the polls' countdown's sample of the light
     * path's polls (requests.c; the `polled` line) */
    atomic_ullong polls;
} ct_point;

extern CT_PROFRUN_HIDDEN ct_point ct_coll_slots[CT_COLL_SLOTS];
extern CT_PROFRUN_HIDDEN ct_point ct_p2p_slots[CT_P2P_SLOTS];
/* their cells (profrun.c and the polls' widening read entries 0 .. used - 1) */
extern CT_PROFRUN_HIDDEN ct_table ct_coll_table, ct_p2p_table;
/* calls not counted: their table was full */
extern CT_PROFRUN_HIDDEN atomic_ullong ct_coll_lost, ct_p2p_lost;

/* ---- the budget's measure of the profiling run's own time (profcomm.c's ct_level) -------- */
/* The call path's own time (outside the library's calls), in ticks: measured on the calls the
 * countdown times (one in CT_TIME_EVERY on average, each standing for CT_TIME_EVERY calls, as
 * the front end scales a point's time), plus every chain's unwind; the synchronisations are
 * counted apart (their latency). One sample is capped (CT_OWN_CAP ticks, ~40 us at 3 GHz: a
 * call path of a few hundred instructions never takes that; a descheduling in the middle does,
 * and must not count 16 times). */
#define CT_OWN_CAP (1ull << 17)
extern CT_PROFRUN_HIDDEN atomic_ullong ct_own_ticks;
static inline void ct_own_add(uint64_t ticks, uint64_t weight)
{
    if ((int64_t)ticks < 0)
        return;   /* ticks read on two cores a hair apart */
    atomic_fetch_add_explicit(&ct_own_ticks, (ticks < CT_OWN_CAP ? ticks : CT_OWN_CAP) * weight,
                              memory_order_relaxed);
}

/* A point's first CT_TIME_ALL calls are timed; then the countdown's, one in CT_TIME_EVERY on
 * average, which are also the own-time samples (profcall.c's ct_time_this); this thread's
 * countdown, and its rearming. */
#define CT_TIME_ALL 64
#define CT_TIME_EVERY 16
#define ct_time_left (ct_profrun_me.time_left)   /* (ct_profrun.h: the thread's hot line) */
CT_PROFRUN_HIDDEN void ct_time_rearm(void);
/* A call path that is not a collective's or a generated point-to-point wrapper's (the watched
 * Wait/Test family, requests.c) counts itself down here: the clock at its entry when this call
 * is the countdown's (its own time then stands for CT_TIME_EVERY calls), else 0. */
static inline uint64_t ct_own_begin(void)
{
    if (__builtin_expect(ct_time_left > 1, 1)) {
        ct_time_left--;
        return 0;
    }
    ct_time_rearm();
    return ct_profrun_ticks();
}

/* The clock at a call path's entry where the countdown may time this call (0: it will not):
 * read before anything else the path does, so that its own time is measured whole. */
static inline uint64_t ct_own_entry(void)
{
    return __builtin_expect(ct_time_left <= 1, 0) ? ct_profrun_ticks() : 0;
}

/* ---- per communicator (profcomm.c): sampling schedule and budget, call patterns ---------- */
enum { CT_PAT_REDUCE_BCAST, CT_PAT_SMALL_REDUCTIONS, CT_PAT_BARRIER_SYNC, CT_PAT_COUNT };

/* A call as patterns compare it with the next one on its communicator. What a memoised call's
 * repetition reads and writes of it comes first: the buffers and the bytes
 * (ct_profcomm_buffers_fit), on the memo entry's second line (profcall.c's ct_memo); the rest is
 * compared only when the call before it is another than last time (ct_profcomm_pattern). */
typedef struct ct_fingerprint {
    const void *in;             /* the reduction's input buffer (its recvbuf when in place) */
    const void *out;            /* where this rank has the result, NULL where it has none */
    int64_t bytes;
    int root, kind, count;
    MPI_Datatype type;
    MPI_Op op;
    const void *site;
} ct_fingerprint;

/* A communicator's profiling state: a keyval attribute, allocated at its first profiled call.
 * Defined here so that the call path reads its call counter and size inline. The previous
 * collective call's fingerprint is a memoised call's (profcall.c) or `own`, identified by an id
 * that changes whenever the fingerprint there is rewritten: valid while *prev_idp == prev_id. */
typedef struct __attribute__((aligned(64))) ct_pcomm {
    /* what every call reads and writes: one cache line */
    uint64_t calls;             /* collective calls on it so far: the same number on every rank */
    uint64_t next_sample;       /* the number of the next sampled call; UINT64_MAX: none */
    const ct_fingerprint *prev;
    const uint64_t *prev_idp;
    uint64_t prev_id, prev_seq; /* prev_seq: its number in the thread's sequence of calls */
    int nprocs, rank;
    /* The low 32 bits of the number of the call that makes a pattern pair with the previous
     * one here if it comes next (0: none): set by a call all of whose kind are recorded (its
     * function's light path shut) or that is its function's sample, so that pairs are counted
     * exactly, or through their first call's sample (follow_lead: its light id, -1: exact). */
    uint32_t follow;
    int16_t inter;
    int16_t follow_lead;
    uint64_t period, samples;
    uint64_t last_sync_ns;      /* this rank's previous synchronisation here, 0: none yet */
    uint64_t own_id;
    ct_fingerprint own;         /* a call that is not memoised */
} ct_pcomm;

/* (pattern, first site, second site, communicator size, log2 bytes of the second call); no
 * padding: compared and copied as bytes (ct_table_probe). */
typedef struct ct_pat_key {
    const void *first, *second;
    int pattern, nprocs, bin, zero;
} ct_pat_key;
_Static_assert(sizeof(ct_pat_key) == 2 * sizeof(void *) + 4 * sizeof(int), "no padding");

/* A pattern's counter (profcomm.c's table). */
typedef struct ct_pat_slot {
    atomic_int state;           /* 0 empty, 2 ready (ct_table_probe) */
    ct_pat_key key;
    atomic_ullong count, bytes;
    /* of those, the pairs whose first call was its function's light-path sample (light id
     * `lead`), and their bytes: estimated by that function's total over its sample */
    uint64_t sampled, sampled_bytes;
    int lead;
} ct_pat_slot;

/* A memoised call's pattern with the call it last followed directly: `after` is that call's
 * fingerprint id (0: none yet), `pattern` the one their arguments other than the buffers make
 * (-1: none), `slot` its counter; the buffers' part is checked on every call
 * (ct_profcomm_buffers_fit: applications reduce into other buffers from call to call). */
typedef struct ct_pat_memo {
    uint64_t after;
    ct_pat_slot *slot;
    int pattern;
} ct_pat_memo;

/* This thread's last communicator and its state, valid while `generation` is the global one
 * (bumped when any state is freed: a freed communicator's handle may be reused); the call path
 * reads it inline (ct_pcomm_of in profcall.c), ct_profcomm_lookup fills it. */
typedef struct ct_pcomm_cache {
    MPI_Comm comm;
    ct_pcomm *state;
    unsigned generation;
} ct_pcomm_cache;
extern CT_PROFRUN_HIDDEN _Thread_local ct_pcomm_cache ct_profcomm_cache
    CT_TLS_MODEL;
extern CT_PROFRUN_HIDDEN atomic_uint ct_profcomm_generation;

/* The collectives' light path in their wrappers (gen_wrappers.py's BY_ARGS rows, before their
 * serving function): a call on the communicator the numbered light path took last (ct_hot.h's
 * cache, set by profcall.c's ct_profiled_args, cleared when a state is freed), with its
 * countdown above 1, no synchronisation due on it (the line's `until`), no follower of a
 * collective due and not made under a call colltune serves, counts its countdown and the
 * communicator's calls in the line (`pending`), and the wrapper goes to the library: one line,
 * the pass-through's (the communicator's state was a second, ~25 ns a call at OpenFOAM's rate of
 * evictions). Any other call goes on to the serving function, whose numbered light path takes what
 * this one leaves (another communicator, a follower that is not one). Shut (CT_POLL_SHUT, so
 * under MPI_THREAD_MULTIPLE always) or at 1, it is never taken. A library's collective made
 * under the library's own would be counted here as the application's (the numbered path marks
 * colltune's own calls; the libraries measured make none). */
static inline __attribute__((always_inline)) int ct_light_collective(int coll, MPI_Comm comm)
{
    const int slot = ct_coll_slot_light(coll);
    int32_t left = ct_coll_line.left[slot];
    uint32_t until = ct_coll_line.until;
    if (__builtin_expect(left > 1 && comm == ct_coll_line.comm
                             && (ct_coll_line.inside | ct_coll_line.follow) == 0 && until != 0,
                         1)) {
        ct_coll_line.left[slot] = left - 1;
        ct_coll_line.pending++;
        ct_coll_line.until = until - 1;
        return 1;
    }
    return 0;
}

/* The collectives' light calls counted in ct_coll_line.pending and added since (every call's
 * number; profstate.c). */
extern CT_PROFRUN_HIDDEN uint64_t ct_coll_light_calls;

/* Before a full path reads or counts a communicator's calls (ct_profiled_args, ct_profcomm_due):
 * the wrappers' light calls added to their communicator's count, and their light path closed
 * until the numbered one arms it again (a full path may change the count or the next sample).
 * No write where nothing is armed, so never under MPI_THREAD_MULTIPLE. */
static inline void ct_coll_line_flush(void)
{
    uint32_t n = ct_coll_line.pending;
    if (__builtin_expect(n != 0, 0)) {
        ct_coll_line.state->calls += n;
        ct_coll_light_calls += n;
        ct_coll_line.pending = 0;
    }
    if (ct_coll_line.until != 0)
        ct_coll_line.until = 0;
}

/* The numbered light path took a call on `st`'s communicator: the wrappers may take its next
 * calls up to its next sample. */
static inline void ct_coll_line_arm(MPI_Comm comm, ct_pcomm *st)
{
    uint64_t left = st->next_sample > st->calls ? st->next_sample - st->calls : 0;
    ct_coll_line.comm = comm;
    ct_coll_line.state = st;
    ct_coll_line.until = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
}

CT_PROFRUN_HIDDEN int ct_profcomm_prepare(void);                 /* the keyval; 0: failed */
CT_PROFRUN_HIDDEN void ct_profcomm_start(uint64_t every, uint64_t budget_ppm, uint64_t ns0);
CT_PROFRUN_HIDDEN void ct_profcomm_finish(void);
/* The communicator's state, found or made, and cached for this thread; NULL: none. */
CT_PROFRUN_HIDDEN ct_pcomm *ct_profcomm_lookup(MPI_Comm comm);
CT_PROFRUN_HIDDEN uint64_t ct_profcomm_gap(uint64_t period, uint64_t k);

/* Counts the call; 1 if it is one to sample (then ct_profcomm_sync). */
static inline int ct_profcomm_due(ct_pcomm *st)
{
    ct_coll_line_flush();
    return __builtin_expect(st->calls++ == st->next_sample, 0);
}

/* A sampled call: the timed synchronisation before it (1, *wait_ns = its time; 0: failed). */
CT_PROFRUN_HIDDEN int ct_profcomm_sync(ct_pcomm *st, MPI_Comm comm, uint64_t *wait_ns);
/* After a successful call: its fingerprint is written to *fp (a memo entry's, else NULL: the
 * state's own) under a new id in *idp; the pattern it completes with the previous call is
 * counted (and cached in *pm where given); then it is the previous call. `seq`: its number in
 * the thread's sequence of intercepted calls ("directly after" for patterns). */
CT_PROFRUN_HIDDEN void ct_profcomm_after(ct_pcomm *st, ct_fingerprint *fp, uint64_t *idp,
                                         ct_pat_memo *pm, int kind, const void *site,
                                         const struct ct_call *call, int64_t bytes, uint64_t seq);
/* The pattern a memoised call (fingerprint *fp) makes with the previous call, cached in *pm
 * (profcall.c's ct_repeat_pattern asks only when the previous call is another than last time). */
CT_PROFRUN_HIDDEN void ct_profcomm_pattern(ct_pcomm *st, const ct_fingerprint *fp,
                                           ct_pat_memo *pm, int64_t bytes);
/* `pairs` pairs of `bytes` bytes (the second calls', summed) into a pattern's counter. */
CT_PROFRUN_HIDDEN void ct_pat_bump(ct_pat_slot *slot, uint64_t pairs, uint64_t bytes);
/* One of them (counted there too) whose first call was the light-path sample of light id
 * `lead`: its pattern's pairs are estimated from those (profcomm.c's pattern_sampled line). */
CT_PROFRUN_HIDDEN void ct_pat_sampled(ct_pat_slot *slot, uint64_t bytes, int lead);

/* Does the call numbered `seq` make a pattern pair with the previous call on its communicator:
 * directly after it on this thread, that call's fingerprint unchanged, and that call one whose
 * pairs are counted (st->follow: its function's calls all recorded, or it was the sample)? */
static inline int ct_profcomm_paired(const ct_pcomm *st, uint64_t seq)
{
    return st->prev_seq + 1 == seq && st->prev != NULL && *st->prev_idp == st->prev_id
           && st->follow == (uint32_t)seq;
}

/* Do a pattern's two calls' buffers make it (Reduce+Bcast: the Bcast sends what the Reduce's
 * root received; small reductions back to back: the second's input does not overlap the first's
 * result)? Inline, as the fingerprint's buffers below: a memoised call's repetition asks both
 * (a call each was ~30 instructions of a ~300-instruction path on OpenFOAM). */
static inline int ct_overlap(const void *a, int64_t na, const void *b, int64_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a != NULL && b != NULL && x < y + (uintptr_t)nb && y < x + (uintptr_t)na;
}

/* (`root`: cur's, as the caller has it at hand: a memo entry's key, whose line a repetition
 * reads anyway, instead of the fingerprint's third line) */
static inline int ct_profcomm_buffers_fit(const ct_pcomm *st, int pattern,
                                          const ct_fingerprint *prev, const ct_fingerprint *cur,
                                          int root)
{
    if (pattern == CT_PAT_REDUCE_BCAST)
        return st->rank != root || cur->in == prev->out;
    if (pattern == CT_PAT_SMALL_REDUCTIONS)
        return !ct_overlap(cur->in, cur->bytes, prev->out, prev->bytes);
    return 1;
}

/* A call's buffers in its fingerprint (where its result is, what it reads), from its arguments
 * (the call path by arguments, profcall.c) or its ct_call. */
static inline void ct_fingerprint_args(ct_fingerprint *f, const ct_pcomm *st, int kind,
                                       const void *sendbuf, void *recvbuf, int root)
{
    if (kind == CT_COLL_ALLREDUCE || kind == CT_COLL_REDUCE) {
        int has_result = kind == CT_COLL_ALLREDUCE || st->rank == root;
        f->in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        f->out = has_result ? recvbuf : NULL;
    } else {
        f->in = kind == CT_COLL_BCAST ? recvbuf : NULL;   /* the root's data */
        f->out = NULL;
    }
}

static inline void ct_fingerprint_buffers(ct_fingerprint *f, const ct_pcomm *st, int kind,
                                          const struct ct_call *call)
{
    ct_fingerprint_args(f, st, kind, call->sendbuf, call->recvbuf, call->root);
}

/* The pattern lines, patterns_lost and sample_syncs of dir/rank-N (MPI_Finalize). */
CT_PROFRUN_HIDDEN void ct_profcomm_write(FILE *out, double ns_per_tick);

/* A watched function's call (watch.c): counted and timed at its point (kind CT_PR_FN_BASE + its
 * ct_fn_id), which is returned (NULL: the table is full) for its requests' completion. */
CT_PROFRUN_HIDDEN ct_point *ct_profrun_watched(int kind, const void *site, int nprocs,
                                               int64_t bytes, uint64_t ticks);
/* A Wait/Test call's point-to-point point at its chain (bytes 0; NULL: the table is full, the
 * call counted as lost), and one call recorded there (counted, `ticks` its time; the thread's
 * call sequence advanced, as every intercepted call does it). */
CT_PROFRUN_HIDDEN ct_point *ct_profrun_p2p_slot(ct_p2p_call call, const void *chain);
CT_PROFRUN_HIDDEN void ct_profrun_p2p_record(ct_point *s, uint64_t ticks);
/* One call counted there, untimed (a poll that completed a request on the light path). */
CT_PROFRUN_HIDDEN void ct_profrun_p2p_count(ct_point *s);
/* `calls` (>= 1) calls of 0 bytes at once, `timed` of them timed, `ticks` their time, `max` the
 * longest (a memoised polling call's repetitions, requests.c). */
CT_PROFRUN_HIDDEN void ct_profrun_p2p_add(ct_point *s, uint64_t calls, uint64_t timed,
                                          uint64_t ticks, uint64_t max);
/* This thread's intercepted calls, numbered: every intercepted call advances it (patterns'
 * "directly after"); a memoised polling call does it inline. A poll on the light path does not:
 * it only brings its function's countdown down (requests.c, below MPI_THREAD_MULTIPLE), so a
 * call's number is ct_call_number's: this thread's calls and the process's polls counted by
 * the countdowns (while the light path is open: those before each was last armed, plus the
 * armed values, less what is left of them). */
#define ct_seq (ct_profrun_me.seq)
extern CT_PROFRUN_HIDDEN unsigned char ct_poll_lite, ct_poll_sum;
/* The light path's functions (requests.c): the point-to-point calls (their ct_p2p_call) and the
 * collectives (CT_LIGHT_COLL + their id); each has a countdown (CT_LEFT, below). */
#define CT_LIGHT_COLL CT_P2P_COUNT
#define CT_LIGHT_IDS (CT_P2P_COUNT + CT_NUM_COLLECTIVES)
/* Its countdown (light id `id`): in the point-to-point or the collectives' hot line (ct_hot.h);
 * a function without a light path reads ct_left_none, which stays shut. */
extern CT_PROFRUN_HIDDEN int32_t ct_left_none;
static inline int32_t *ct_left_of(int id)
{
    int slot = id < CT_LIGHT_COLL ? ct_p2p_slot(id) : ct_coll_slot_light(id - CT_LIGHT_COLL);
    if (slot < 0)
        return &ct_left_none;
    return id < CT_LIGHT_COLL ? &ct_p2p_line.left[slot] : &ct_coll_line.left[slot];
}
#define CT_LEFT(id) (*ct_left_of(id))
extern CT_PROFRUN_HIDDEN uint64_t ct_polls_counted_all, ct_polls_armed_all;
/* The calls numbered outside the thread's sequence: the polls' (counted by their countdowns)
 * and the light calls' (counted in the hot lines). */
static inline uint64_t ct_calls_elsewhere(void)
{
    uint64_t n = ct_polls_counted_all + ct_p2p_line.calls + ct_coll_light_calls
                 + ct_coll_line.pending;
    if (__builtin_expect(ct_poll_sum, 0))   /* open, and polls may have taken it (requests.c) */
        n += ct_polls_armed_all
             - (uint64_t)((int64_t)ct_p2p_line.left[ct_p2p_slot(CT_P2P_TEST)]
                          + ct_p2p_line.left[ct_p2p_slot(CT_P2P_TESTALL)]
                          + ct_p2p_line.left[ct_p2p_slot(CT_P2P_TESTANY)]
                          + ct_p2p_line.left[ct_p2p_slot(CT_P2P_TESTSOME)]);
    return n;
}
/* The number the thread's next call will take (ct_call_number's, without taking it). */
static inline uint64_t ct_call_number_next(void)
{
    return ct_seq + 1 + ct_calls_elsewhere();
}
static inline uint64_t ct_call_number(void)
{
    uint64_t n = ++ct_seq;
    return n + ct_calls_elsewhere();
}
/* The light path of repeated calls (requests.c, "the light path of repeated calls"): a call of
 * a function with one (light id `id`) takes it when its countdown is above 1: counted down,
 * numbered, and the wrapper goes to the library. Shut (CT_POLL_SHUT, far below) or at 1, it
 * takes the full path; at 1 it is the function's sample (ct_light_due), which ct_light_take
 * rearms and ct_light_noted records at its point after the full path (NULL: none). Only below
 * MPI_THREAD_MULTIPLE (plain counters); a countdown that is shut never moves. */
static inline int ct_light_call(int id)
{
    int32_t left = CT_LEFT(id);
    if (__builtin_expect(left > 1, 1)) {
        CT_LEFT(id) = left - 1;
        if (id < CT_LIGHT_COLL)
            ct_p2p_line.calls++;
        else
            ct_coll_light_calls++;
        return 1;
    }
    return 0;
}
static inline int ct_light_due(int id)
{
    return __builtin_expect(CT_LEFT(id) == 1, 0);
}
/* Is the function's light path open (so that a call on its full path is not its sample but a
 * call made to go there: counted exactly, and no pattern's first call)? */
static inline int ct_light_open(int id)
{
    return CT_LEFT(id) >= 0;
}
CT_PROFRUN_HIDDEN int ct_light_take(int id);
/* Is this call (off the light path) its function's sample? Then rearmed. */
static inline int ct_light_sample(int id)
{
    return ct_light_due(id) && ct_light_take(id);
}
/* A sample (a poll's or a light function's: its countdown's call), recorded at `point` after its
 * full path (NULL: the table was full: in its function's total only, no site's sample). */
CT_PROFRUN_HIDDEN void ct_light_noted(int id, ct_point *point);
/* The light path opened once the thread's calls reach COLLTUNE_PROFILE_RUN_LIGHT (profcall.c's
 * countdown rearm asks, every ~16 calls of the full path). */
CT_PROFRUN_HIDDEN void ct_light_start_due(void);
/* Each pattern's pairs counted through a sample of light id `lead` kept with probability 1/2
 * (`halve(n)`: how many of n are kept), at most `most` (its points' sample kept), as the points'
 * samples at a widening of that function's period (requests.c). */
CT_PROFRUN_HIDDEN void ct_profcomm_light_halve(int lead, uint64_t most, uint64_t (*halve)(uint64_t n));

/* The memoised polling calls' repetitions into their points (requests.c; MPI_Finalize, before
 * the points are written). */
CT_PROFRUN_HIDDEN void ct_profrun_polls_finish(void);
/* The polls' light path on or off (requests.c): on while profiling below MPI_THREAD_MULTIPLE
 * (profrun.c calls it once ct_profrun_on is set) and no collective request is followed. */
CT_PROFRUN_HIDDEN void ct_profrun_polls_start(uint64_t light_after);
/* The polls lines of dir/rank-N: per Test-family function, its light path's polls and the
 * countdown's sample of them; the polls' period and its doublings (MPI_Finalize). */
CT_PROFRUN_HIDDEN void ct_profrun_polls_write(FILE *out);
/* The run is over its budget (profcomm.c, at a synchronisation): the sampling periods of the
 * light functions that cost the most since the last time doubled, half of their sample so far
 * dropped at random, if any was sampled since then (requests.c; a polling phase over, its sample
 * is kept whole). */
CT_PROFRUN_HIDDEN void ct_profrun_polls_over_budget(void);
/* This rank's own cost at or over its budget now (profcomm.c's level): the polls' sample asks
 * between synchronisations (requests.c). */
CT_PROFRUN_HIDDEN int ct_profcomm_over_budget(void);

/* ---- call chains (profchain.c) ----------------------------------------------------------- */
/* A chain: the site and up to CT_CHAIN_DEPTH - 1 return addresses above it. */
#define CT_CHAIN_DEPTH 8
/* Chain ids: the entries of profchain.c's dense array, one per chain the process met, at most
 * this many (its intern table's size); the memo tables have as many entries, indexed by
 * `id >> 3`, so that every chain has an entry of its own. */
#define CT_CHAIN_IDS 4096
/* Memo entries made (a call that was not its entry's repetition: the chain's first, or another
 * chain's or call's in the entry): collective, point-to-point and polling entries; with an entry
 * per chain, each chain's calls make one each unless their arguments change (`memo_made`). */
enum { CT_MEMO_COLL, CT_MEMO_P2P, CT_MEMO_POLL, CT_MEMO_KINDS };
extern CT_PROFRUN_HIDDEN atomic_ullong ct_memo_made[CT_MEMO_KINDS];
/* The call's site for the tables: its interned chain (the return address `site` into the
 * caller of MPI_* and the frames above it); `anchor`: an address in the MPI_* wrapper's frame,
 * the same for the same stack depth at the call. An unwind only for a chain new to the thread. */
/* (cold: the call path's inline lookup falls back on it out of its hot code) */
CT_PROFRUN_HIDDEN __attribute__((cold)) const void *ct_profchain_site(const void *site,
                                                                      const void *anchor);
/* A chain as a thread met it: where its frames' return addresses were on the stack, as offsets
 * from the anchor (the same anchor, the same stack depth: the same slots). Entries never move
 * once made (hints and followers point at them). An entry is one cache line, aligned, and a
 * lookup that matches reads nothing else of it: the compared fields, its id and its follower
 * (the entry the thread met next after it last time: its next call's first try). The frames'
 * return addresses are not kept here but as one hash of them (ct_chain_mix; the chain's
 * addresses are in profchain.c's intern table, which the rank file's `chain` lines read), and
 * the slots as 16-bit offsets (a chain whose slots are farther than 32 KB from the anchor is not
 * kept: unwound at each of its calls, its counts exact). With the seven addresses and 32-bit
 * offsets an entry filled two lines, both read at every call (OpenFOAM, callgrind's simulation:
 * one line less took libcolltune's D1 misses from 8.3 to 6.9 a call); as pointers, three. */
typedef struct __attribute__((aligned(64))) ct_chain_seen {
    const void *site, *anchor;
    uint64_t hash;                            /* ct_chain_mix of the frames' return addresses */
    const void *id;                           /* its id (profchain.c); NULL: empty */
    struct ct_chain_seen *follow;             /* the entry met next after it, NULL: none yet */
    struct ct_chain_seen *next;               /* its set's list (profchain.c; a hit skips it) */
    int16_t off[CT_CHAIN_DEPTH - 1];          /* the slots, from the anchor; past `frames`: the
                                                 last frame's again */
    int16_t frames;                           /* return addresses above the site */
} ct_chain_seen;
_Static_assert(sizeof(ct_chain_seen) == 64, "an entry: one cache line");
/* The hash of a chain's frames, one step a frame: h = rotl(h ^ word, 29) * odd. Each step is a
 * bijection of the word (for a given h) and of h (for a given word), so two stacks that differ in
 * one slot alone never hash alike; two that differ in several collide only where the mix of
 * 64-bit values meets by chance, ~2^-64 a compare of an entry with another chain's stack at the
 * same site, anchor and slots (a call makes a few such compares at most: OpenFOAM's 100 steps,
 * ~7 * 10^4 calls a rank, < 10^-13 a run). A false match would count the call at the other
 * chain's site (its result untouched: the call is passed through all the same). The rotation
 * brings the high bits down before the multiply (without it a word's top bit flipped in two
 * slots cancelled). */
#define CT_CHAIN_MIX_K 0x9E3779B97F4A7C15ull
static inline uint64_t ct_chain_mix(uint64_t h, uint64_t word)
{
    h ^= word;
    h = (h << 29) | (h >> 35);
    return h * CT_CHAIN_MIX_K;
}
/* Is the call at (site, anchor) this chain? One load per frame, no unwind. Every frame is read,
 * without a branch (a loop that stopped at the first difference cost ~67 instructions a call in
 * loop control and compares, OpenFOAM): past a frame that differs the answer is "not this chain"
 * whatever the slots hold, and every slot is in this thread's stack above the wrapper's frame
 * (the anchor is the same); the unused frames repeat the last one. A chain that ends at its site
 * (no frame above it) compares its site and anchor alone (its slots: the anchor's own word,
 * read and ignored). (Every entry a list or a hint holds has its id.) */
extern CT_PROFRUN_HIDDEN const void *const ct_chain_none;
static inline int ct_profchain_is(const ct_chain_seen *s, const void *site, const void *anchor)
{
    if (s->site != site || s->anchor != anchor)
        return 0;
    uint64_t h = 0;
#pragma GCC unroll 8
    for (int i = 0; i < CT_CHAIN_DEPTH - 1; i++)
        h = ct_chain_mix(h, *(const uint64_t *)((const char *)anchor + s->off[i]));
    return h == s->hash || s->frames == 0;
}
/* Each thread's chains as it met them (profchain.c): a list per set of (site, anchor) pairs, the
 * entry that followed each one (ct_chain_seen.follow: a loop makes its calls in the same order
 * each time), and two hints to the entry that matched last. The first, by (site, anchor, the
 * thread's previous call's chain), is the next try where the follower is not the chain (a chain
 * followed by several, up to four at different sites: OpenFOAM's one MPI_Waitall site has 20
 * chains, which the frame above the site tells apart only 4 ways; with that frame alone, and 4
 * ways a set, 10,551 of 24,448 lookups in 200 steps went to the ways and a spill, ~130
 * instructions a call). The second, by (site, anchor, the frame above the site), read where the
 * set's lead has that frame (the same slot for every chain of one site and anchor), is tried
 * next (OpenFOAM's Foam::reduce site, reached from 35 callers, most of them told apart at that
 * frame), then the set's list. */
#define CT_CHAIN_SETS 512   /* per thread, by (site, anchor) */
#define CT_CHAIN_AFTER (4 * CT_CHAIN_IDS)
#define CT_CHAIN_HINTS 2048
_Static_assert((CT_CHAIN_SETS & (CT_CHAIN_SETS - 1)) == 0, "a power of two (a mask)");
_Static_assert((CT_CHAIN_AFTER & (CT_CHAIN_AFTER - 1)) == 0, "a power of two (a mask)");
_Static_assert((CT_CHAIN_HINTS & (CT_CHAIN_HINTS - 1)) == 0, "a power of two (a mask)");

/* A set's (site, anchor) met last and where the frame above its site has its return address
 * (the same slot for every chain there; ct_chain_none's address where a chain ends at its
 * site). */
typedef struct ct_chain_lead {
    const void *site, *anchor;
    const void *const *above;
} ct_chain_lead;

typedef struct ct_chain_chunk ct_chain_chunk;   /* profchain.c's */
typedef struct __attribute__((aligned(64))) ct_chain_cache {
    /* (the entry of this thread's previous lookup: ct_profrun_me.last) */
    ct_chain_seen *after[CT_CHAIN_AFTER];     /* by (site, the previous lookup's chain) */
    ct_chain_seen *hint[CT_CHAIN_HINTS];      /* by (site, anchor, the frame above the site) */
    ct_chain_lead lead[CT_CHAIN_SETS];
    ct_chain_seen *sets[CT_CHAIN_SETS];       /* each set's list, the last found first */
    ct_chain_chunk *chunks;                   /* where the entries are (never moved) */
    unsigned entries;                         /* made so far (capped: profchain.c) */
    struct ct_chain_cache *list;              /* every thread's, freed at MPI_Finalize */
    void *allocated;                          /* what calloc returned (profchain.c) */
} ct_chain_cache;
#define ct_chain_mine (ct_profrun_me.chains)

/* The call's chain: the entry that followed the previous call's last time, where it is this
 * call's (inline in the call path: one entry's line read, nothing else but the thread's
 * line); else ct_profchain_site. */
static inline const void *ct_profchain_fast(const void *site, const void *anchor)
{
    const ct_chain_seen *g = ct_profrun_me.guess;
    if (__builtin_expect(g != NULL && ct_profchain_is(g, site, anchor), 1)) {
        ct_profrun_me.last = (ct_chain_seen *)g;
        ct_profrun_me.guess = g->follow;
        return g->id;
    }
    return ct_profchain_site(site, anchor);
}

/* The same lookup out of line, one copy in CT_HOT_TEXT for the wrappers that repeat (the
 * collectives' call path by arguments, the point-to-point wrappers): inline, each of them had
 * its own ~150 bytes of it, and a burst of different calls (a halo exchange's Irecvs and
 * Isends, then the solver's Allreduce) fetched each copy's lines anew (profchain.c). */
CT_PROFRUN_HIDDEN const void *ct_profchain_shared(const void *site, const void *anchor);

/* A new chain's frames walked with each return address's rule kept (profwalk.c): `take` gets
 * every (return address, CFA of the frame it returns from) pair libgcc's unwind would report,
 * from ct_profwalk's caller up, until it answers nonzero or the stack ends; 1: walked, 0: a frame
 * the walk does not take (then libgcc unwinds the chain; `take` may have seen some frames). */
typedef int (*ct_frame_fn)(void *arg, const void *ip, uintptr_t cfa);
CT_PROFRUN_HIDDEN int ct_profwalk(ct_frame_fn take, void *arg);
/* The chain lines and chains_made of dir/rank-N; the per-thread caches freed (MPI_Finalize). */
CT_PROFRUN_HIDDEN void ct_profchain_write(FILE *out);
CT_PROFRUN_HIDDEN void ct_profchain_finish(void);
/* MPI_Finalize's flushes visit only the memo and poll entries the ids made so far index (an
 * entry per id, `id >> 3`): ct_profchain_ids() ids, the n-th at ct_profchain_id(n); -1 where a
 * call's site may be no such id (the intern table was full: the site itself, anywhere in a
 * table), then every entry is visited. A whole table read at MPI_Finalize faulted in every page
 * of it (OpenFOAM: ~500 of a profiled rank's ~1,100 extra page faults, 1-8 us each on this
 * virtual machine). */
CT_PROFRUN_HIDDEN int ct_profchain_ids(void);
CT_PROFRUN_HIDDEN const void *ct_profchain_id(int n);

/* ---- point-to-point calls (profcall.c; the generated wrappers' repetitions inline) -------- */
/* A chain's last point-to-point call, per thread, as profcall.c's ct_memo for collectives: when
 * the same call comes again from the same chain with the same count and (predefined) datatype,
 * its point and size are taken from here and the call is counted here (into the point at the
 * entry's reuse and at MPI_Finalize), so a repetition neither sizes its datatype nor looks up its
 * point nor touches the shared counters unless it is timed. OpenFOAM's halo exchanges: each
 * boundary's Isend and Irecv come back with the same counts every step. */
typedef struct __attribute__((aligned(32))) ct_p2p_memo {
    const void *site;             /* the chain; NULL: empty */
    MPI_Datatype type;
    int kind, count;
    ct_point *slot;
    uint64_t calls;               /* repetitions not yet in the point's counters */
    int64_t bytes;
    uint32_t time_all;            /* repetitions still timed: the point's first CT_TIME_ALL */
} ct_p2p_memo;
/* One entry per chain id (profchain.c numbers at most CT_CHAIN_IDS chains): no two chains
 * share an entry (QE's pw.x has 1,214 chains; 512 entries made chain n and n + 512 alternate in
 * one, each call of theirs taking the full path). The block is allocated zeroed and untouched
 * (calloc's fresh pages), so a process uses the memory of the entries its chains use. */
#define CT_P2P_MEMOS CT_CHAIN_IDS
_Static_assert((CT_P2P_MEMOS & (CT_P2P_MEMOS - 1)) == 0, "a power of two (a mask)");
/* This thread's entries (its memo block's first member, profcall.c); NULL before its first
 * point-to-point call's full path, and under MPI_THREAD_MULTIPLE (their counters are not
 * atomic). */
#define ct_p2p_memos ((ct_p2p_memo *)ct_profrun_me.memos)

/* Chain ids are consecutive pointers (profchain.c's dense array): `chain >> 3` gives every chain
 * an entry of its own, as profcall.c's ct_memo_at. */
static inline ct_p2p_memo *ct_p2p_memo_at(ct_p2p_memo *memos, const void *chain, int kind)
{
    (void)kind;
    return &memos[((uintptr_t)chain >> 3) & (CT_P2P_MEMOS - 1)];
}

/* The generated wrapper's own path for the common call, inline (the wrapper then jumps to the
 * library: no call of ct_profrun_p2p_begin, whose call kept the wrapper's seven arguments in
 * saved registers, ~60 instructions of a ~145-instruction Isend on OpenFOAM): 1 when this call
 * is its chain's last call again (ct_profrun_p2p_begin's memo) and untimed (the point's first
 * CT_TIME_ALL calls are done and the countdown is not at its call), then counted there; 0:
 * nothing was changed, ct_profrun_p2p_begin takes the call. */
static inline int ct_profrun_p2p_again(ct_p2p_call call, const void *chain, int count,
                                       MPI_Datatype type)
{
    ct_p2p_memo *memos = ct_p2p_memos;
    if (__builtin_expect(memos == NULL, 0))
        return 0;
    ct_p2p_memo *m = ct_p2p_memo_at(memos, chain, (int)call);
    if (m->site != chain || m->kind != (int)call || m->count != count || m->type != type
        || m->time_all != 0 || ct_time_left <= 1)
        return 0;
    ct_seq++;
    m->calls++;
    ct_time_left--;
    return 1;
}

/* ---- the call path (profcall.c), as MPI_Finalize ends it ---------------------------------- */
/* Every thread's memoised repetitions into the points, and the memo blocks freed: after
 * ct_profrun_on is cleared (no call reaches the memo any more). */
CT_PROFRUN_HIDDEN void ct_profcall_finish(void);

#endif /* CT_PROFRUN_IMPL_H */

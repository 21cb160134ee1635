/*
 * Collective requests followed to their completion (ct_watch.h): the requests the watched
 * nonblocking and persistent functions make, MPI_Start/MPI_Startall, MPI_Request_free and the
 * Wait/Test family. The time a Wait/Test call spends is shared among the active requests it was
 * given; a collective request's share is its waiting, and at its completion the point of the
 * call that made it gets (completed, waiting, start-to-completion span): the overlap the
 * application got is the span less the waiting. Point-to-point requests are untouched: a call
 * given none of the followed requests takes the point-to-point path (the profiling mode's p2p
 * record of Wait/Waitall/Waitany, as before). A Test-family poll made while no request is
 * followed takes a light path (counted per function, its site sampled: below); a
 * call repeated at one site while the map is unchanged takes its derived data from a memo.
 *
 * The map: request handle -> (function, point, persistent, operation's start, waiting so far),
 * open addressing with tombstones in a fixed table, under a spin lock (only while counting or
 * profiling, and only when the call was given a followed request: ct_req_live). A request that
 * finds the table full is not followed (counted as lost in nothing: its completions are then
 * missing from the counts, which the test program's exact counts would show).
 */
#include <stdatomic.h>
#include <string.h>

#include "ct_learn.h"
#include "ct_profrun_impl.h"
#include "ct_watch.h"

#define CT_REQ_SLOTS 4096
_Static_assert((CT_REQ_SLOTS & (CT_REQ_SLOTS - 1)) == 0, "a power of two (a mask)");

enum { CT_SLOT_EMPTY, CT_SLOT_USED, CT_SLOT_GONE };

typedef struct ct_req {
    uint64_t key;            /* the request handle's bits */
    int state;               /* CT_SLOT_* */
    int fn;                  /* ct_fn_id of the function that made it */
    int persistent, active;  /* a persistent request is inactive between its operations */
    ct_point *point;         /* the profiling mode's point of that call, or NULL */
    uint64_t start;          /* ticks at the start of the current operation */
    uint64_t waited;         /* ticks of Wait/Test shared to it in the current operation */
    /* learning mode (ct_req_learned): its trace record (index + 1; 0 none), its own ns so far
     * in the current operation, and whether a call was given it among other requests (no
     * reward for that operation then); the operations rewarded so far and their own ns (a
     * persistent request's record gets their mean) */
    uint64_t record, own_ns;
    int shared;
    uint64_t rewarded, rewarded_ns;
} ct_req;

static ct_req ct_reqs[CT_REQ_SLOTS];
/* A slot was written since the map was last cleared: MPI_Finalize's clear (ct_req_clear, every
 * mode) zeroed the whole map, writing ~88 untouched pages in a run that followed no request. */
static int ct_req_touched;
static atomic_int ct_req_live;           /* followed requests: 0 lets Wait/Test skip the map */
/* Bumped whenever the map changes (a request followed, started, completed, dropped): a polling
 * call's memo (below) holds only while it is unchanged. */
static CT_HOT_DATA atomic_uint ct_req_gen;
static int ct_req_gone;                  /* tombstones */
static atomic_flag ct_req_lock = ATOMIC_FLAG_INIT;

/* A poll's light path (below, "a poll's light path") is open while profiling below
 * MPI_THREAD_MULTIPLE (ct_poll_lite_ok) and no collective request is followed (ct_req_live 0).
 * A Test wrapper reads only its function's countdown (ct_poll_light), which is the state and
 * the count too: open, it counts down to the function's next sampled poll (> 0), and the
 * function's polls so far are ct_polls_counted (those before the countdown was last armed) +
 * ct_poll_armed - its countdown, so a light poll is its decrement alone; shut, it holds
 * CT_POLL_SHUT, far below 0, so every poll takes the full path, which puts it back there
 * (ct_poll_sampling): the racing decrements of MPI_THREAD_MULTIPLE, where it is always shut,
 * cannot bring it above 0. While shut, the countdown's remainder waits in ct_poll_kept. */
static unsigned char ct_poll_lite_ok;
CT_HIDDEN CT_HOT_DATA unsigned char ct_poll_lite;
/* ct_call_number adds the light polls' count (the countdowns' sum) only while the light path is
 * open and a poll has been sampled: each function's countdown is first armed at 1, so that its
 * first poll is the countdown's sample, and before any function's first no poll can have taken
 * the light path. A code that never polls (OpenFOAM) never sums the four countdowns: ~12 of a
 * collective's instructions. */
static unsigned char ct_poll_taken;
CT_HIDDEN CT_HOT_DATA unsigned char ct_poll_sum;
CT_HIDDEN int32_t ct_left_none = CT_POLL_SHUT;   /* (CT_LEFT: never armed) */
static int32_t ct_poll_armed[CT_LIGHT_IDS] = {[0 ... CT_LIGHT_IDS - 1] = CT_POLL_SHUT};
static int32_t ct_poll_kept[CT_LIGHT_IDS];
CT_HIDDEN uint64_t ct_polls_counted[CT_LIGHT_IDS];
/* their sums over the four (the first read by every call: ct_call_number) */
CT_HIDDEN CT_HOT_DATA uint64_t ct_polls_counted_all;
CT_HIDDEN uint64_t ct_polls_armed_all;
static const ct_p2p_call ct_poll_fns[] = {CT_P2P_TEST, CT_P2P_TESTALL, CT_P2P_TESTANY, CT_P2P_TESTSOME};
#define CT_POLL_FNS (sizeof ct_poll_fns / sizeof ct_poll_fns[0])
/* The other functions with a light path (ct_light_call, below "the light path of repeated
 * calls"): the generated point-to-point wrappers, MPI_Wait and MPI_Waitall, and the collectives
 * of the call path by arguments (profcall.c). Unlike a poll, each of their light calls numbers
 * itself (its hot line's `calls`), so their countdowns are not in ct_call_number's sums. */
static const int ct_light_fns[] = {
    CT_P2P_SEND, CT_P2P_SSEND, CT_P2P_ISEND, CT_P2P_ISSEND, CT_P2P_RECV, CT_P2P_IRECV,
    CT_P2P_SENDRECV, CT_P2P_WAIT, CT_P2P_WAITALL, CT_LIGHT_COLL + CT_COLL_ALLREDUCE,
    CT_LIGHT_COLL + CT_COLL_REDUCE, CT_LIGHT_COLL + CT_COLL_BCAST};
#define CT_LIGHT_FNS (sizeof ct_light_fns / sizeof ct_light_fns[0])
/* The light path of those opens after the run's first ct_light_after intercepted calls (0:
 * never; COLLTUNE_PROFILE_RUN_LIGHT), ct_light_started from then on. */
static uint64_t ct_light_after;
static unsigned char ct_light_started;

static int ct_is_poll_id(int f)
{
    return f == CT_P2P_TEST || f == CT_P2P_TESTALL || f == CT_P2P_TESTANY || f == CT_P2P_TESTSOME;
}

/* Function f's countdown (re)armed at `left` (the shut value while shut); the polls it counted
 * since its last arming go to ct_polls_counted. */
static void ct_poll_arm(int f, int32_t left)
{
    if (ct_poll_lite) {
        uint64_t since = (uint64_t)((int64_t)ct_poll_armed[f] - CT_LEFT(f));
        ct_polls_counted[f] += since;
        if (ct_is_poll_id(f)) {   /* (ct_call_number's sums: the polls' alone) */
            ct_polls_counted_all += since;
            ct_polls_armed_all += (uint64_t)((int64_t)left - ct_poll_armed[f]);
        }
    }
    ct_poll_armed[f] = CT_LEFT(f) = left;
}

static void ct_poll_lite_set(void)
{
    unsigned char open = ct_poll_lite_ok && atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0;
    if (open == ct_poll_lite)
        return;
    for (size_t i = 0; i < CT_POLL_FNS + (ct_light_started ? CT_LIGHT_FNS : 0); i++) {
        int f = i < CT_POLL_FNS ? (int)ct_poll_fns[i] : ct_light_fns[i - CT_POLL_FNS];
        if (open) {
            ct_poll_armed[f] = CT_LEFT(f) = ct_poll_kept[f];
        } else {
            ct_poll_kept[f] = CT_LEFT(f) > 0 ? CT_LEFT(f) : 1;
            ct_poll_arm(f, CT_POLL_SHUT);
        }
    }
    ct_polls_armed_all = 0;
    if (open)
        for (size_t i = 0; i < CT_POLL_FNS; i++)
            ct_polls_armed_all += (uint64_t)(int64_t)ct_poll_armed[ct_poll_fns[i]];
    ct_poll_lite = open;
    ct_poll_sum = open && ct_poll_taken;
}

static void ct_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&ct_req_lock, memory_order_acquire)) {
    }
}

static void ct_unlock(void)
{
    atomic_flag_clear_explicit(&ct_req_lock, memory_order_release);
}

static uint64_t ct_key(MPI_Request request)
{
    uint64_t key = 0;
    memcpy(&key, &request, sizeof request < sizeof key ? sizeof request : sizeof key);
    return key;
}

static size_t ct_hash(uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29)) & (CT_REQ_SLOTS - 1);
}

/* The used slot of `key`, or NULL (under the lock). */
static ct_req *ct_find(uint64_t key)
{
    for (size_t i = ct_hash(key), probe = 0; probe < CT_REQ_SLOTS; probe++, i = (i + 1) & (CT_REQ_SLOTS - 1)) {
        ct_req *r = &ct_reqs[i];
        if (r->state == CT_SLOT_EMPTY)
            return NULL;
        if (r->state == CT_SLOT_USED && r->key == key)
            return r;
    }
    return NULL;
}

static void ct_changed(void)
{
    atomic_fetch_add_explicit(&ct_req_gen, 1, memory_order_relaxed);
}

static void ct_drop(ct_req *r)
{
    ct_changed();
    r->state = CT_SLOT_GONE;
    ct_req_gone++;
    atomic_fetch_sub_explicit(&ct_req_live, 1, memory_order_relaxed);
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0) {   /* all gone: reset */
        memset(ct_reqs, 0, sizeof ct_reqs);
        ct_req_touched = 0;
        ct_req_gone = 0;
    }
    ct_poll_lite_set();
}

/* Under the lock: `request` followed (a new slot), or NULL when the table is full. */
/* Two functions that start the same call: one form of one row, its int or its _c binding (the
 * learning mode names a started call by the int binding, counting by the one called). */
static int ct_same_start(int a, int b)
{
    return ct_fns[a].coll == ct_fns[b].coll && ct_fns[a].form == ct_fns[b].form;
}

static ct_req *ct_follow(MPI_Request request, int fn, ct_point *point, int persistent,
                         uint64_t start)
{
    uint64_t key = ct_key(request);
    ct_req *old = ct_find(key);
    if (old != NULL && old->record != 0 && old->persistent == persistent
        && old->active == !persistent && ct_same_start(old->fn, fn)) {
        /* the same start (init) seen by counting after the learning mode: one request, both
         * records */
        old->fn = fn;
        old->point = point;
        old->start = start;
        return old;
    }
    if (old != NULL)   /* a handle the library reused after a request we missed */
        ct_drop(old);
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) + ct_req_gone < CT_REQ_SLOTS - 1) {
        for (size_t i = ct_hash(key);; i = (i + 1) & (CT_REQ_SLOTS - 1)) {
            ct_req *r = &ct_reqs[i];
            if (r->state == CT_SLOT_USED)
                continue;
            if (r->state == CT_SLOT_GONE)
                ct_req_gone--;
            ct_req_touched = 1;
            *r = (ct_req){key, CT_SLOT_USED, fn, persistent, !persistent, point, start, 0, 0, 0, 0,
                          0, 0};
            ct_changed();
            atomic_fetch_add_explicit(&ct_req_live, 1, memory_order_relaxed);
            ct_poll_lite_set();
            return r;
        }
    }
    return NULL;
}

void ct_req_add(MPI_Request request, int fn, ct_point *point, int persistent, uint64_t start)
{
    ct_lock();
    ct_follow(request, fn, point, persistent, start);
    ct_unlock();
}

void ct_req_learned(MPI_Request request, int fn, uint64_t record, uint64_t own_ns)
{
    ct_lock();
    ct_req *r = ct_follow(request, fn, NULL, ct_fns[fn].form == CT_FORM_PERSISTENT,
                          ct_watch_clock());
    if (r != NULL) {
        r->record = record;
        r->own_ns = own_ns;
    }
    ct_unlock();
}

void ct_req_clear(void)
{
    ct_lock();
    if (ct_req_touched)
        memset(ct_reqs, 0, sizeof ct_reqs);
    ct_req_touched = 0;
    ct_req_gone = 0;
    atomic_store(&ct_req_live, 0);
    ct_changed();
    ct_poll_lite_set();
    ct_unlock();
}

void ct_req_started(MPI_Request request, uint64_t t0, uint64_t own_ns, int alone)
{
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0)
        return;
    ct_lock();
    ct_req *r = ct_find(ct_key(request));
    if (r != NULL && r->persistent) {
        ct_changed();
        r->active = 1;
        r->start = t0;
        r->waited = 0;
        r->own_ns = own_ns;   /* learned: this operation's reward starts with MPI_Start's time */
        r->shared = !alone;
        ct_req_count_start(r->fn);
        if (r->point != NULL)
            atomic_fetch_add_explicit(&r->point->req_starts, 1, memory_order_relaxed);
    }
    ct_unlock();
}

void ct_req_freed(MPI_Request request)
{
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0)
        return;
    ct_lock();
    ct_req *r = ct_find(ct_key(request));
    if (r != NULL)
        ct_drop(r);
    ct_unlock();
}

int ct_req_begin(ct_reqwatch *w, int count, const MPI_Request *requests)
{
    w->n = 0;
    w->total = 0;
    w->ns0 = 0;
    w->t0 = ct_watch_clock();
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0 || requests == NULL)
        return 0;
    ct_lock();
    for (int i = 0; i < count; i++) {
        if (requests[i] == MPI_REQUEST_NULL)
            continue;
        w->total++;
        ct_req *r = ct_find(ct_key(requests[i]));
        if (r != NULL && r->active && w->n < CT_REQ_BATCH) {
            w->at[w->n] = i;
            w->key[w->n] = r->key;
            w->n++;
            w->ns0 |= r->record != 0;
        }
    }
    ct_unlock();
    if (w->ns0)   /* the learning mode's reward: the call's own time, read last before it */
        w->ns0 = ct_now();
    return w->n;
}

static int ct_listed(int i, const int *list, int n)
{
    for (int k = 0; k < n; k++)
        if (list[k] == i)
            return 1;
    return 0;
}

uint64_t ct_req_end(ct_reqwatch *w, int all, int index, const int *list, int n_list)
{
    uint64_t t1 = w->t1 = ct_watch_clock(), dt = t1 > w->t0 ? t1 - w->t0 : 0;
    if (w->n == 0)
        return dt;
    uint64_t share = w->total > 0 ? dt / (uint64_t)w->total : 0;
    uint64_t own_ns = w->ns0 != 0 ? ct_now() - w->ns0 : 0;
    ct_lock();
    for (int k = 0; k < w->n; k++) {
        ct_req *r = ct_find(w->key[k]);
        if (r == NULL || !r->active)
            continue;
        r->waited += share;
        if (r->record != 0) {   /* the call's own time is this request's only if given it alone */
            r->own_ns += own_ns;
            r->shared |= w->total != 1;
        }
        int i = w->at[k];
        if (!(all || i == index || (list != NULL && ct_listed(i, list, n_list))))
            continue;
        ct_req_count_completion(r->fn);
        if (r->record != 0 && !r->shared) {
            r->rewarded++;
            r->rewarded_ns += r->own_ns;
        }
        if (r->record != 0)
            ct_trace_completed(r->record, r->rewarded ? r->rewarded_ns / r->rewarded : 0,
                               r->rewarded != 0);
        if (r->point != NULL) {
            atomic_fetch_add_explicit(&r->point->req_done, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->point->req_wait_ns, r->waited, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->point->req_span_ns, t1 > r->start ? t1 - r->start : 0,
                                      memory_order_relaxed);
        }
        if (r->persistent) {
            ct_changed();
            r->active = 0;
        } else {
            ct_drop(r);
        }
    }
    ct_unlock();
    return share * (uint64_t)(w->total - w->n);
}

/* ---- a polling call's memo ------------------------------------------------------------------ */
/* A code that polls (HPCC's RandomAccess: 2.18 M MPI_Testany on rank 0 against 3,265 collectives)
 * paid the whole path on every poll: the map's lookup under its lock, the chain's lookup, the
 * point-to-point table's probe and two clock reads, ~340 instructions a poll, 27.6% of the
 * application's own instructions. A Wait/Test call repeated at one site (same function and
 * chain: the entry is found by the chain, so that one Waitall reached from several callers in
 * turn, OpenFOAM's, keeps an entry per chain) while the map is unchanged (ct_req_gen) is the same
 * call as the entry's: its chain, point and followed requests are the entry's. Where it was given no
 * followed request, a repetition is counted in the entry and timed as a point-to-point call is
 * (its point's first CT_TIME_ALL calls, then the countdown's: one in CT_TIME_EVERY), and the
 * entry's counts go to the point when the entry is reused and at MPI_Finalize. Where it was given
 * followed collective requests, every repetition is timed and their share of its time added to
 * them as ct_req_end would (their waiting is made of those shares), and one that completes a
 * followed request takes ct_req_end like any call. Where no request at all was followed when
 * the entry was made, the handles given do not matter (none becomes a followed one without the
 * map changing); else the entry holds them (up to CT_POLL_HANDLES) and a repetition must give
 * the same. Process-wide like the map: only below MPI_THREAD_MULTIPLE (one thread at a time in
 * MPI) and only while profiling. */
#define CT_POLLS CT_CHAIN_IDS   /* an entry per chain id (~1 MB of zero pages, touched as used) */
#define CT_POLL_FOLLOWED 4
#define CT_POLL_HANDLES 16
_Static_assert((CT_POLLS & (CT_POLLS - 1)) == 0, "a power of two (a mask)");

/* What a repetition reads and counts comes first, then the handles it compares: aligned, a
 * repetition given a few handles reads one cache line of its entry (264-byte entries packed
 * end to end put those fields on 3-4 lines, each a miss after the application's own work:
 * OpenFOAM's Waitall). */
typedef struct __attribute__((aligned(64))) ct_poll {
    const void *chain;            /* the call's chain (profchain.c); NULL: empty */
    int call;                     /* ct_p2p_call */
    unsigned gen;                 /* ct_req_gen when it was made */
    int any;                      /* no request was followed then: the handles do not matter */
    int count;
    const MPI_Request *requests;
    ct_point *point;              /* its point-to-point part's point; NULL: none (not recorded) */
    uint64_t calls;               /* repetitions not yet in the point */
    uint32_t time_all;            /* repetitions still timed: the point's first CT_TIME_ALL */
    int n;                        /* followed requests given */
    MPI_Request handles[CT_POLL_HANDLES];
    /* the timed repetitions not yet in the point, their ticks and the longest */
    uint64_t timed, ticks, max;
    int total;                    /* active requests given */
    int at[CT_POLL_FOLLOWED];
    ct_req *req[CT_POLL_FOLLOWED];
} ct_poll;
_Static_assert(offsetof(ct_poll, handles) <= 56, "a repetition's fields on its first line");

static ct_poll ct_polls[CT_POLLS];

/* Chain ids are consecutive pointers (profchain.c's dense array): `chain >> 3` gives every chain
 * an entry of its own (a multiplicative hash let two of OpenFOAM's share one), as profcall.c's
 * ct_memo_at; the call is compared. */
static inline ct_poll *ct_poll_at(ct_p2p_call call, const void *chain)
{
    (void)call;
    return &ct_polls[((uintptr_t)chain >> 3) & (CT_POLLS - 1)];
}

/* An entry made where requests were followed: the same handles given (out of line: inline, its
 * ~60 bytes of code sat in the middle of the Wait family's straight path, a line of it read on
 * every call of a code that follows none, OpenFOAM's). */
static __attribute__((noinline)) int ct_poll_same(const ct_poll *p, int count,
                                                  const MPI_Request *requests)
{
    return p->requests == requests && p->count == count
           && memcmp(p->handles, requests, (size_t)count * sizeof *requests) == 0;
}

/* The entry this call (at `chain`) repeats, or NULL. */
static inline __attribute__((always_inline)) ct_poll *ct_poll_find(ct_p2p_call call, const void *chain,
                                                                   int count, const MPI_Request *requests)
{
    ct_poll *p = ct_poll_at(call, chain);
    if (p->chain != chain || p->call != (int)call
        || p->gen != atomic_load_explicit(&ct_req_gen, memory_order_relaxed))
        return NULL;
    if (!p->any && !ct_poll_same(p, count, requests))
        return NULL;
    return p;
}

static void ct_poll_flush(ct_poll *p)
{
    if (p->point != NULL && p->calls > 0)
        ct_profrun_p2p_add(p->point, p->calls, p->timed, p->ticks, p->max);
    p->calls = p->timed = p->ticks = p->max = 0;
}

void ct_profrun_polls_finish(void)
{
    ct_poll_lite_ok = 0;
    ct_poll_lite_set();
    /* only the entries the chain ids index (profchain.c): reading every entry faulted in the
     * table's ~256 untouched pages at each MPI_Finalize */
    int ids = ct_profchain_ids();
    for (int i = 0; i < (ids < 0 ? CT_POLLS : ids); i++) {
        ct_poll *p = ids < 0 ? &ct_polls[i] : ct_poll_at(CT_P2P_COUNT, ct_profchain_id(i));
        if (p->chain == NULL)
            continue;
        ct_poll_flush(p);
        p->chain = NULL;
    }
}

/* ---- a poll's light path -------------------------------------------------------------------- */
/* HPCC's RandomAccess polls MPI_Testany once per ~1,250 of its own instructions on rank 0: the
 * memo's 135 instructions a poll were 12.3% of them, a light path that read the call's result
 * back (to count a completing poll at its site) 26 instructions, still 2.1%. A Test-family call
 * made while no collective request is followed is counted in its function's total only, by
 * its function's countdown (above), before the library's call, which is then the wrapper's
 * tail call: the pass-through's own instructions (the countdown's decrement, its branch, the
 * jump: ct_poll_passes; a test of ct_watch before them was 2 more, a separate count one more
 * again, each 2.2 M instructions of HPCC's 2.7 G on rank 0). The
 * countdowns' calls (one in its ct_poll_every on average, below) take the full path instead: their chain's point
 * counts and times them, and they are its sample (ct_point.polls, ct_polls_sampled), completing
 * or not. advise scales a site's sample by its function's total over its sample (an estimate
 * with its interval); the totals stay exact. The Wait family (it blocks, and completes) and a
 * call given a followed collective request take the exact path (the map, the memo): a
 * nonblocking collective's waiting stays exact. */
static uint64_t ct_polls_sampled[CT_LIGHT_IDS], ct_polls_thinned[CT_LIGHT_IDS];

/* The sampling period, each function's own: one in ct_poll_every[f] of its light calls on
 * average, gaps ct_poll_every[f]/2 .. 3 ct_poll_every[f]/2 from an xorshift as the call path's
 * (so that no cycle of the application's calls is missed). A sampled call's full path costs ~600
 * instructions (chain, point, clock reads): sampling at a fixed rate made them most of a polling
 * code's profiling cost (HPCC: 34,000 of them, 0.7% of its instructions). A function's period
 * doubles when its sample reaches CT_POLL_SAMPLE (a site's estimate needs a sample of that size,
 * not one that grows with the run: it then stays between a half and the whole of it, and the
 * samples taken grow with the log of the calls), and, for the functions whose samples cost the
 * most (ct_poll_widen_costly), when the profiling run is over its budget: at a synchronisation
 * where samples were taken since the last time (profcomm.c, as the collectives' period) and when
 * the sample itself finds this rank over its budget (CT_POLL_BUDGET_EVERY). At a function's
 * doubling half of its sample so far is dropped, each at random, so that what is kept is a
 * sample at the new period of its every call so far; a dropped one stays counted at its site
 * (its calls), out of its function's total. Never narrowed: samples dropped cannot be taken back.
 * Per function because advise estimates a site's calls from its function's sample alone: one
 * process-wide period, widened by HPCC's 2.2 M polls to 131,072, left rank 1's MPI_Sendrecv
 * (8,173 light calls) its first call alone as sample, a cold 347 us one that stood for all of
 * them (benchmarks/advise/README.md, "What advise loses"). Process-wide state, as the light path
 * is only below MPI_THREAD_MULTIPLE (plain counters). A sample of 1,024-2,047 gives a site with
 * a quarter of its function's calls a 95% interval of about +-7.5-10.6% of its estimate
 * (+-2.5-3.5% with three quarters); 2,048-4,095 halved that by sqrt(2) for ~2 M more
 * instructions on HPCC's rank 0 (0.07% of its own), which the 1% budget could not pay. */
#define CT_POLL_EVERY 64
#define CT_POLL_SAMPLE 2048
#define CT_POLL_MAX_PERIOD (1u << 24)
/* The budget asked once per this many samples taken (a clock read and a division, ~60 ns): over
 * it, the costly functions' periods double there, as at a synchronisation. While a run stays
 * over its budget their sample is halved at each ask and grows by this many between: it settles
 * at 64..127 calls. */
#define CT_POLL_BUDGET_EVERY 64
static uint32_t ct_poll_every[CT_LIGHT_IDS] = {[0 ... CT_LIGHT_IDS - 1] = CT_POLL_EVERY};
static uint32_t ct_poll_rng = 0x9E3779B9u;
static uint32_t ct_poll_widened[CT_LIGHT_IDS];   /* its period's doublings */
/* samples taken since the last widening for the budget: who cost it (dropped ones included) */
static uint64_t ct_poll_taken_since[CT_LIGHT_IDS];
static uint64_t ct_poll_sampled_at_sync;           /* ct_poll_sample_all at the last over_budget */
static uint64_t ct_poll_sample_all;                /* samples taken, dropped ones included */

static uint32_t ct_poll_random(void)
{
    uint32_t x = ct_poll_rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return ct_poll_rng = x;
}

static int32_t ct_poll_gap(int f)
{
    return (int32_t)(ct_poll_every[f] / 2 + ct_poll_random() % (ct_poll_every[f] + 1));
}

/* Each of `n` samples kept with probability 1/2: how many are kept. */
static uint64_t ct_poll_halve(uint64_t n)
{
    uint64_t kept = 0;
    for (; n >= 32; n -= 32)
        kept += (uint64_t)__builtin_popcount(ct_poll_random());
    if (n > 0)
        kept += (uint64_t)__builtin_popcount(ct_poll_random() & ((1u << n) - 1));
    return kept;
}

/* Function f's period doubled, half of its sample dropped. */
static void ct_poll_widen(int f)
{
    if (!ct_poll_lite_ok || ct_poll_every[f] >= CT_POLL_MAX_PERIOD)
        return;
    ct_poll_every[f] *= 2;
    ct_poll_widened[f]++;
    /* its points: the point-to-point table's (a poll's or a light function's sample: ct_p2p_call
     * is its light id) or the collectives' (CT_LIGHT_COLL + their id; the watched functions'
     * points, above the collectives' ids, have none): the claimed entries only */
    int coll = f >= CT_LIGHT_COLL;
    int kind = coll ? f - CT_LIGHT_COLL : f;
    ct_point *table = coll ? ct_coll_slots : ct_p2p_slots;
    size_t used = ct_table_used(coll ? &ct_coll_table : &ct_p2p_table);
    for (size_t i = 0; i < used; i++) {
        ct_point *s = &table[i];
        uint64_t n = atomic_load_explicit(&s->polls, memory_order_relaxed);
        if (n == 0 || s->key.kind != kind || atomic_load_explicit(&s->state, memory_order_relaxed) != 2)
            continue;
        uint64_t dropped = n - ct_poll_halve(n);
        atomic_store_explicit(&s->polls, n - dropped, memory_order_relaxed);
        ct_polls_sampled[f] -= dropped;
        ct_polls_thinned[f] += dropped;
    }
    /* the pattern pairs counted through its sample: halved alike (profcomm.c), never more than
     * the sample kept (advise reads a pattern's sampled pairs as a part of that sample) */
    ct_profcomm_light_halve(f, ct_polls_sampled[f], ct_poll_halve);
}

/* Over the budget: the periods of the functions whose samples cost the most since the last
 * time (at least a quarter of the most any one took) doubled. A function with few calls keeps
 * its period, and so a sample of its own sites, while a polling loop's period widens; were it to
 * cost as much in turn, it would be widened too. */
static void ct_poll_widen_costly(void)
{
    uint64_t most = 0;
    for (int f = 0; f < CT_LIGHT_IDS; f++)
        if (ct_poll_taken_since[f] > most)
            most = ct_poll_taken_since[f];
    for (int f = 0; most > 0 && f < CT_LIGHT_IDS; f++)
        if (ct_poll_taken_since[f] > 0 && ct_poll_taken_since[f] >= most / 4)
            ct_poll_widen(f);
    memset(ct_poll_taken_since, 0, sizeof ct_poll_taken_since);
}

void ct_profrun_polls_over_budget(void)
{
    if (ct_poll_sample_all > ct_poll_sampled_at_sync)
        ct_poll_widen_costly();
    ct_poll_sampled_at_sync = ct_poll_sample_all;
}

static inline int ct_is_poll(ct_p2p_call call)
{
    return ct_is_poll_id((int)call);
}

void ct_profrun_polls_start(uint64_t light_after)
{
    ct_light_after = light_after;
    ct_light_started = 0;
    memset(ct_polls_counted, 0, sizeof ct_polls_counted);
    ct_polls_counted_all = 0;
    memset(ct_polls_sampled, 0, sizeof ct_polls_sampled);
    memset(ct_polls_thinned, 0, sizeof ct_polls_thinned);
    for (int f = 0; f < CT_LIGHT_IDS; f++)
        ct_poll_every[f] = CT_POLL_EVERY;
    memset(ct_poll_widened, 0, sizeof ct_poll_widened);
    memset(ct_poll_taken_since, 0, sizeof ct_poll_taken_since);
    ct_poll_sample_all = ct_poll_sampled_at_sync = 0;
    for (size_t i = 0; i < CT_POLL_FNS; i++)
        ct_poll_kept[ct_poll_fns[i]] = 1;   /* its first poll sampled (ct_poll_sum) */
    for (size_t i = 0; i < CT_LIGHT_FNS; i++)
        ct_poll_armed[ct_light_fns[i]] = CT_LEFT(ct_light_fns[i]) = CT_POLL_SHUT;
    ct_poll_taken = ct_poll_sum = 0;
    ct_p2p_line.calls = ct_coll_light_calls = 0;
    ct_coll_line.pending = ct_coll_line.until = 0;
    ct_coll_line.follow = 0;
    ct_poll_lite_ok = !ct_profrun_mt;   /* plain counters: one thread at a time in MPI */
    ct_poll_lite_set();
}

void ct_profrun_polls_write(FILE *out)
{
    int any = 0, widest = 0;
    for (int f = 0; f < CT_LIGHT_IDS; f++)
        if (ct_polls_counted[f] > ct_polls_thinned[f]) {   /* (shut by now: all counted) */
            any = 1;
            if (ct_poll_every[f] > ct_poll_every[widest])
                widest = f;
            fprintf(out, "%s %s %llu %llu\n", ct_is_poll_id(f) ? "polls" : "light",
                    f < CT_LIGHT_COLL ? ct_p2p_names[f] : colltune_collective_name(f - CT_LIGHT_COLL),
                    (unsigned long long)(ct_polls_counted[f] - ct_polls_thinned[f]),
                    (unsigned long long)ct_polls_sampled[f]);
        }
    if (any)
        fprintf(out, "poll_period %u %u\n", ct_poll_every[widest], ct_poll_widened[widest]);
}

/* Before the library's call: 1 for the light path. (A poll made from inside a call colltune
 * serves, ct_profrun_inside, is counted too: colltune's own code never polls through MPI_Test.) */
static inline __attribute__((always_inline)) int ct_poll_light(ct_p2p_call call)
{
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
    /* the decrement's own flags: two instructions (gcc reloads and tests the value for `> 0`) */
    int above;
    __asm__("subl $1, %0" : "+m"(CT_LEFT(call)), "=@ccg"(above));
    return CT_LIKELY(above);
#else
    return CT_LIKELY(--CT_LEFT(call) > 0);
#endif
}

/* A poll goes straight to the library: on the light path (above), or with nothing watching
 * (ct_watch 0), where its countdown stands idle (CT_POLL_IDLE, ct_polls_watch_written) and is
 * put back there on the rare poll that brings it to 0. One test for both, so that a profiled
 * poll's light path is pass-through's own instructions: its decrement, its branch, the jump (a
 * test of ct_watch before the countdown's was HPCC's 2.2 M polls a rank, half of its light entry
 * points' CPU samples over pass-through's, session 27). */
static inline __attribute__((always_inline)) int ct_poll_passes(ct_p2p_call call)
{
    if (CT_LIKELY(ct_poll_light(call)))
        return 1;
    if (CT_LIKELY(ct_watch))
        return 0;
    CT_LEFT(call) = CT_POLL_IDLE;
    return 1;
}

void ct_polls_watch_written(void)
{
    for (size_t i = 0; i < CT_POLL_FNS; i++) {
        int f = (int)ct_poll_fns[i];
        if (!ct_watch)
            CT_LEFT(f) = CT_POLL_IDLE;
        else if (!ct_poll_lite)
            ct_poll_armed[f] = CT_LEFT(f) = CT_POLL_SHUT;
    }
}

/* A Test-family call off the light path: while it is open, the countdown's sample (rearmed);
 * shut, the countdown is put back far below 0. */
static int ct_poll_sampling(ct_p2p_call call)
{
    if (call == CT_P2P_WAIT || call == CT_P2P_WAITALL)
        return ct_light_sample((int)call);
    if (!ct_is_poll(call))
        return 0;
    if (!ct_poll_lite) {
        CT_LEFT(call) = CT_POLL_SHUT;
        return 0;
    }
    ct_poll_arm(call, ct_poll_gap((int)call));   /* (this poll counted: it brought the countdown to 0) */
    ct_poll_taken = ct_poll_sum = 1;
    return 1;
}

/* A call its countdown sampled, a poll's or a light function's (counted in its function's total
 * when the countdown was armed again), after its full path recorded it at `point`. */
void ct_light_noted(int id, ct_point *point)
{
    if (point == NULL)
        return;
    ct_polls_sampled[id]++;
    atomic_store_explicit(&point->polls, atomic_load_explicit(&point->polls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    ct_poll_sample_all++;
    ct_poll_taken_since[id]++;
    if (ct_polls_sampled[id] >= CT_POLL_SAMPLE)
        ct_poll_widen(id);
    else if (ct_poll_sample_all % CT_POLL_BUDGET_EVERY == 0 && ct_profcomm_over_budget())
        ct_poll_widen_costly();
}

/* ---- the light path of repeated calls ---------------------------------------------------------
 * OpenFOAM makes a call every ~7 us of its own work, which evicts what the previous call read:
 * each line a profiled call reads is then a cache miss, and a call's full path (its chain's
 * entry and the seven stack words that verify it, its memo entry, its communicator's state,
 * the pattern's fingerprints) cost ~230 ns of wall time a call (benchmarks/advise/callcost.py),
 * 3% of the run, where the budget is 1%. After the run's first ct_light_after calls, the
 * functions of ct_light_fns take the polls' light path: a call counts its function's countdown
 * down (ct_light_call, inline in its wrapper: the countdowns' line and the thread's hot line)
 * and goes to the library; the countdown's call (one in its ct_poll_every, jittered) is the
 * function's sample and takes the full path, recorded at its point and as part of its sample
 * (ct_point.polls; the `sampled` and `light` lines): advise estimates each site's calls from its
 * part of the sample (an interval with it), the function's total is exact. A collective's light
 * call still counts its communicator's calls (the synchronisations' schedule, the same on every
 * rank) and leaves the sampled synchronisation's call and the call right after a sample (a
 * pattern's second call) to the full path, counted exactly there. */

int ct_light_take(int id)
{
    CT_LEFT(id) = 0;   /* (counted: its function's total includes its sample) */
    ct_poll_arm(id, ct_poll_gap(id));
    return 1;
}

void ct_light_start_due(void)
{
    if (ct_light_started || ct_light_after == 0 || ct_seq < ct_light_after || !ct_poll_lite_ok)
        return;
    ct_light_started = 1;
    for (size_t i = 0; i < CT_LIGHT_FNS; i++) {
        int f = ct_light_fns[i];
        /* its first light call is its sample, as a poll's: a function with calls on the light
         * path then has a sample where they are (else advise could place them nowhere) */
        ct_poll_kept[f] = 1;
        if (ct_poll_lite)
            ct_poll_armed[f] = CT_LEFT(f) = ct_poll_kept[f];
    }
}

static __attribute__((noinline)) void ct_watch_begin_full(ct_watchcall *c, ct_p2p_call call,
                                                          const void *site, const void *anchor,
                                                          int count, const MPI_Request *requests)
{
    c->call = call;
    c->site = site;
    c->anchor = anchor;
    c->gen = atomic_load_explicit(&ct_req_gen, memory_order_relaxed);
    c->none_followed = atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0;
    ct_req_begin(&c->w, count, requests);
}

/* Inline in each wrapper, with ct_watch_end: a repetition's path is a few loads and compares.
 * `own`: the Wait family's timed path (ct_wait_timed_begin) read the own-time clock already
 * (`t_in`, ct_own_begin's) and looked the chain up (`chain`, even NULL). */
static inline __attribute__((always_inline)) void ct_watch_begin_own(ct_watchcall *c,
                                                                     ct_p2p_call call,
                                                                     const void *site,
                                                                     const void *anchor,
                                                                     const void *chain, int count,
                                                                     const MPI_Request *requests,
                                                                     int own, uint64_t t_in)
{
    c->memo = NULL;
    c->t_in = 0;
    c->chain = NULL;
    /* a Test-family call here while the light path is open (only while profiling): the polls'
     * countdown's sample (its own time measured: it stands for itself, ct_watch_end) */
    c->sampled = ct_poll_sampling(call);
    if (ct_profrun_on) {
        c->t_in = c->sampled ? ct_profrun_ticks() : own ? t_in : ct_own_begin();
        if (!ct_profrun_mt && !ct_profrun_inside && !c->sampled) {
            c->chain = chain != NULL || own ? chain : ct_profchain_fast(site, anchor);
            c->memo = ct_poll_find(call, c->chain, count, requests);
        }
        ct_poll *p = c->memo;
        if (p != NULL) {
            c->w.t0 = 0;
            if (c->t_in != 0 || p->n > 0 || p->time_all > 0)
                c->w.t0 = ct_profrun_ticks();
            return;
        }
    }
    ct_watch_begin_full(c, call, site, anchor, count, requests);
}

static inline __attribute__((always_inline)) void ct_watch_begin(ct_watchcall *c, ct_p2p_call call,
                                                                 const void *site,
                                                                 const void *anchor,
                                                                 const void *chain, int count,
                                                                 const MPI_Request *requests)
{
    ct_watch_begin_own(c, call, site, anchor, chain, count, requests, 0, 0);
}

/* A repetition that completed no followed request: what ct_req_end and the point-to-point part
 * would record, from the entry. */
static inline __attribute__((always_inline)) void ct_poll_again(ct_poll *p, ct_watchcall *c)
{
    if (p->point != NULL) {
        ct_seq++;
        p->calls++;
    }
    if (c->w.t0 == 0)
        return;
    uint64_t t1 = c->w.t1 = ct_profrun_ticks(), dt = t1 > c->w.t0 ? t1 - c->w.t0 : 0;
    if (p->time_all > 0)
        p->time_all--;
    if (p->n > 0) {
        uint64_t share = dt / (uint64_t)p->total;
        for (int k = 0; k < p->n; k++)
            p->req[k]->waited += share;
        dt = share * (uint64_t)(p->total - p->n);
    }
    p->timed++;
    p->ticks += dt;
    if (dt > p->max)
        p->max = dt;
}

/* The entry of a call that completed nothing it followed (none_followed: whatever it completed),
 * if it can be memoised. */
static void ct_poll_make(const ct_watchcall *c, int count, const MPI_Request *requests,
                         ct_point *point)
{
    const ct_reqwatch *w = &c->w;
    int any = c->none_followed;
    if (atomic_load_explicit(&ct_req_gen, memory_order_relaxed) != c->gen || c->chain == NULL
        || (!any && (requests == NULL || count < 0 || count > CT_POLL_HANDLES || w->n > CT_POLL_FOLLOWED)))
        return;
    ct_poll *p = ct_poll_at(c->call, c->chain);
    ct_poll_flush(p);
    p->chain = NULL;   /* (the entry is made whole or left empty) */
    ct_lock();
    for (int k = 0; k < w->n; k++) {
        ct_req *r = ct_find(w->key[k]);
        if (r == NULL || !r->active || r->record != 0) {   /* learned: every call's own time */
            ct_unlock();
            return;
        }
        p->at[k] = w->at[k];
        p->req[k] = r;
    }
    ct_unlock();
    p->call = (int)c->call;
    p->gen = c->gen;
    p->any = any;
    p->count = count;
    p->requests = requests;
    if (!any)
        memcpy(p->handles, requests, (size_t)count * sizeof *requests);
    p->point = point;
    p->time_all = 0;
    if (point != NULL) {
        uint64_t seen = atomic_load_explicit(&point->calls, memory_order_relaxed);
        p->time_all = seen < CT_TIME_ALL ? (uint32_t)(CT_TIME_ALL - seen) : 0;
    }
    p->n = w->n;
    p->total = w->total;
    p->chain = c->chain;
    atomic_fetch_add_explicit(&ct_memo_made[CT_MEMO_POLL], 1, memory_order_relaxed);
}

/* Every call that is not a repetition of a memoised one, and a repetition that completed a
 * followed request: ct_req_end, then the point-to-point part at its chain's point (and the
 * entry made where the call can be memoised). */
static __attribute__((noinline)) void ct_watch_full(ct_watchcall *c, int count,
                                                    const MPI_Request *requests, int done, int all,
                                                    int index, const int *list, int n_list)
{
    ct_poll *p = c->memo;
    if (p != NULL) {   /* the followed requests the entry holds, as ct_req_begin found them */
        c->w.n = p->n;
        c->w.total = p->total;
        for (int k = 0; k < p->n; k++) {
            c->w.at[k] = p->at[k];
            c->w.key[k] = p->req[k]->key;
        }
    }
    uint64_t ticks = ct_req_end(&c->w, all, index, list, n_list);
    int p2p = ct_p2p_on && !ct_profrun_inside && (c->w.n == 0 || c->w.total > c->w.n);
    if (p != NULL) {
        if (p2p)
            ct_profrun_p2p_record(p->point, ticks);
        return;
    }
    ct_point *point = NULL;
    if (p2p) {
        if (c->chain == NULL)   /* (not looked up for a memo) */
            c->chain = ct_profchain_site(c->site, c->anchor);
        point = ct_profrun_p2p_slot(c->call, c->chain);
        ct_profrun_p2p_record(point, ticks);
    }
    if (c->sampled) {
        ct_light_noted(c->call, point);
        return;   /* no memo: the light path takes the next ones */
    }
    if (p2p && point == NULL)
        return;   /* the table is full: every call counted as lost */
    if (ct_profrun_on && !ct_profrun_mt && !ct_profrun_inside && (c->none_followed || !done))
        ct_poll_make(c, count, requests, point);
}

/* After the library's call: `done`, the call completed a request; which ones: all (`all`), the
 * one at `index`, those in `list` (ct_req_end). The own time where the countdown took it. */
static inline __attribute__((always_inline)) void ct_watch_end(ct_watchcall *c, int count,
                                                               const MPI_Request *requests,
                                                               int done, int all, int index,
                                                               const int *list, int n_list)
{
    ct_poll *p = c->memo;
    if (p != NULL && (p->n == 0 || !done))
        ct_poll_again(p, c);
    else
        ct_watch_full(c, count, requests, done, all, index, list, n_list);
    /* (a sampled poll's full path stands for itself: the light polls around it cost a few
     * instructions each, which no clock read here could measure) */
    if (c->t_in != 0)
        ct_own_add(c->w.t0 - c->t_in + (ct_profrun_ticks() - c->w.t1),
                   c->sampled ? 1 : CT_TIME_EVERY);
}

void ct_watch_enter(ct_watchcall *c, ct_p2p_call call, const void *site, const void *anchor,
                    int count, const MPI_Request *requests)
{
    c->light = ct_is_poll(call) && ct_poll_light(call);
    if (c->light)
        return;
    ct_watch_begin(c, call, site, anchor, NULL, count, requests);
}

void ct_watch_leave(ct_watchcall *c, int count, const MPI_Request *requests, int done, int all,
                    int index, const int *list, int n_list)
{
    if (!c->light)
        ct_watch_end(c, count, requests, done, all, index, list, n_list);
}

/* The Wait family's common call, before ct_watch_begin: a repetition of its chain's entry that
 * follows no request and is not timed (the entry's point's first CT_TIME_ALL calls are done,
 * the countdown is not at its call) records nothing but its count (ct_poll_again's), counted
 * here, before the library's call, as a generated point-to-point wrapper counts its repetition:
 * the wrapper then ends in a jump to the library, so it saves no register and keeps no frame
 * but its anchor across the call, and needs no ct_watchcall (OpenFOAM's MPI_Waitall: ~145
 * instructions a call, ~40 of them that record's setting up). 0: ct_wait_timed_begin, given the
 * chain found here (*chain; NULL: not looked up). */
static inline __attribute__((always_inline)) int ct_wait_again(ct_p2p_call call, const void *site,
                                                               const void *anchor, int count,
                                                               const MPI_Request *requests,
                                                               const void **chain)
{
    *chain = NULL;
    /* (CT_WATCH_MEMO: ct_profrun_on && !ct_profrun_mt, on ct_watch's line, which the wrapper
     * read, as is ct_req_gen below: ct_profrun_on's line is not read) */
    if (!(ct_watch & CT_WATCH_MEMO) || ct_profrun_inside || ct_time_left <= 1)
        return 0;
    /* the lookup's one copy the point-to-point wrappers run too (ct_profrun_impl.h): a halo
     * exchange's Isends and Irecvs have just fetched its lines */
    *chain = ct_profchain_shared(site, anchor);
    /* ct_poll_find's, for an entry made where no request was followed (the handles do not
     * matter); any other goes to the timed path, given the chain, which counts a repetition of
     * its entry the same (untimed there too where t_in and time_all are 0) */
    ct_poll *p = ct_poll_at(call, *chain);
    if (p->chain != *chain || p->call != (int)call
        || p->gen != atomic_load_explicit(&ct_req_gen, memory_order_relaxed) || !p->any
        || p->n != 0 || p->time_all != 0)
        return 0;
    (void)count, (void)requests;
    ct_time_left--;   /* (ct_own_begin's countdown) */
    if (p->point != NULL) {
        ct_seq++;
        p->calls++;
    }
    return 1;
}

/* A Wait-family call ct_wait_again did not count, timed where it repeats its chain's entry and
 * that entry was given no followed request (the point's first CT_TIME_ALL calls and the
 * countdown's: OpenFOAM's Waitall, 13% of its calls in 100 steps): ct_watch_begin's, then
 * ct_poll_again's and ct_watch_end's steps on that entry, in their order, in a path of their
 * own (the generic one ran ~20 instruction-cache lines a call). Else (p NULL) the full path,
 * ct_watch_begin_own given what was read here. */
typedef struct ct_wait_timing {
    ct_poll *p;                   /* the entry; NULL: the full path */
    const void *chain;            /* looked up (where `own`) */
    int own;                      /* t_in read (ct_own_begin) and the chain looked up */
    uint64_t t_in, t0;            /* ct_watchcall's t_in, and w.t0 (0: not timed) */
} ct_wait_timing;

static inline __attribute__((always_inline)) void ct_wait_timed_begin(ct_wait_timing *t,
                                                                      ct_p2p_call call,
                                                                      const void *site,
                                                                      const void *anchor,
                                                                      const void *chain, int count,
                                                                      const MPI_Request *requests)
{
    t->p = NULL;
    t->own = 0;
    t->chain = chain;
    if (!ct_profrun_on || ct_profrun_mt || ct_profrun_inside || ct_light_due((int)call))
        return;   /* (ct_watch_begin: its clock, no memo; a light sample: ct_poll_sampling) */
    t->own = 1;
    t->t_in = ct_own_begin();
    if (chain == NULL)
        t->chain = ct_profchain_fast(site, anchor);
    ct_poll *p = ct_poll_find(call, t->chain, count, requests);
    if (p == NULL || p->n != 0)
        return;
    t->t0 = t->t_in != 0 || p->time_all > 0 ? ct_profrun_ticks() : 0;
    t->p = p;
}

/* After the library's call (t->p set). */
static inline __attribute__((always_inline)) void ct_wait_timed_end(const ct_wait_timing *t)
{
    ct_poll *p = t->p;
    if (p->point != NULL) {
        ct_seq++;
        p->calls++;
    }
    if (t->t0 == 0)
        return;   /* (t_in is 0 too) */
    uint64_t t1 = ct_profrun_ticks(), dt = t1 > t->t0 ? t1 - t->t0 : 0;
    if (p->time_all > 0)
        p->time_all--;
    p->timed++;
    p->ticks += dt;
    if (dt > p->max)
        p->max = dt;
    if (t->t_in != 0)
        ct_own_add(t->t0 - t->t_in + (ct_profrun_ticks() - t1), CT_TIME_EVERY);
}

/* ---- the wrappers --------------------------------------------------------------------------- */
/* The Test wrappers' light path ends in its own jump to the library (gcc would merge it with the
 * bare path's: one more jump a poll, 2.2 M on HPCC's rank 0), and their jumps to the library go
 * through its GOT entry, not the PLT (one jump less a poll, light or bare; for the Wait family,
 * whose repetition now ends in that jump too: the PLT's line, a miss a call on OpenFOAM's
 * Waitall). These eight are in every MPI library, so binding them when libcolltune is loaded
 * cannot fail. */
extern __typeof__(PMPI_Test) PMPI_Test __attribute__((noplt));
extern __typeof__(PMPI_Testall) PMPI_Testall __attribute__((noplt));
extern __typeof__(PMPI_Testany) PMPI_Testany __attribute__((noplt));
extern __typeof__(PMPI_Testsome) PMPI_Testsome __attribute__((noplt));
extern __typeof__(PMPI_Wait) PMPI_Wait __attribute__((noplt));
extern __typeof__(PMPI_Waitall) PMPI_Waitall __attribute__((noplt));
extern __typeof__(PMPI_Waitany) PMPI_Waitany __attribute__((noplt));
extern __typeof__(PMPI_Waitsome) PMPI_Waitsome __attribute__((noplt));
#if defined(__GNUC__) && !defined(__clang__)
#define CT_OWN_TAIL_CALLS __attribute__((optimize("no-crossjumping")))
#else
#define CT_OWN_TAIL_CALLS
#endif

/* The Wait/Test family: its point-to-point part (a call given other requests than followed
 * collective ones) goes to the profiling mode's p2p table (p2p.toml's Wait/Test family). */

/* A Wait wrapper and its repetition's function each start a cache line: their code then takes
 * the fewest lines it can (OpenFOAM's MPI_Waitall, 52 bytes, sat across two), whatever the
 * code before them, so that a change elsewhere does not move their line count. MPI_Wait's and
 * MPI_Waitall's, which codes repeat, are in the hot text with the other repeated calls' paths
 * (CT_HOT_TEXT, ct_profrun.h: one page, next to the point-to-point wrappers'). */
#define CT_LINE_START __attribute__((aligned(64)))

/* Each Wait wrapper's path other than its repetition is a function of its own, out of the hot
 * text (cold): inline, it spread the repetition's ~80 instructions over a 1.8 KB function, and
 * each cache line of code the repetition runs is a miss after the application's own work
 * (OpenFOAM's Waitall: 6 instruction-cache misses a call in callgrind's simulation). The
 * anchor is the wrapper's frame, handed over. */
static __attribute__((noinline, cold)) int ct_waited_full(const void *site, const void *anchor,
                                                          const void *chain,
                                                          MPI_Request *request,
                                                          MPI_Status *status)
{
    ct_wait_timing t;
    ct_wait_timed_begin(&t, CT_P2P_WAIT, site, anchor, chain, 1, request);
    if (t.p != NULL) {
        int rc = PMPI_Wait(request, status);
        ct_wait_timed_end(&t);
        return rc;
    }
    ct_watchcall c;
    ct_watch_begin_own(&c, CT_P2P_WAIT, site, anchor, t.chain, 1, request, t.own, t.t_in);
    int rc = PMPI_Wait(request, status);
    ct_watch_end(&c, 1, request, rc == MPI_SUCCESS, rc == MPI_SUCCESS, -1, NULL, 0);
    return rc;
}

static CT_HOT_TEXT __attribute__((noinline)) int ct_watched_wait(const void *site, MPI_Request *request,
                                                     MPI_Status *status)
{
    const void *anchor = __builtin_frame_address(0), *chain = NULL;
    /* (MPI_Wait took the light path's calls; the sample: the full path, ct_watch_begin_own's
     * ct_poll_sampling) */
    if (CT_LIKELY(!ct_light_due(CT_P2P_WAIT) && ct_wait_again(CT_P2P_WAIT, site, anchor, 1, request, &chain)))
        return PMPI_Wait(request, status);
    return ct_waited_full(site, anchor, chain, request, status);
}

/* The light path's calls leave in the wrapper itself, before the site is read: that read is of
 * the thread's line (a Fortran wrapper's caller) through its GOT entry, two cache lines a call
 * that only a full-path call needs, and ct_watched_wait's own lines of code are two more. */
CT_HOT_TEXT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Wait(request, status);
    if (CT_LIKELY(ct_light_call(CT_P2P_WAIT)))
        return PMPI_Wait(request, status);
    return ct_watched_wait(ct_watch_site(__builtin_return_address(0)), request, status);
}

static __attribute__((noinline, cold)) int ct_waited_all_full(const void *site,
                                                              const void *anchor,
                                                              const void *chain, int count,
                                                              MPI_Request requests[],
                                                              MPI_Status statuses[])
{
    ct_wait_timing t;
    ct_wait_timed_begin(&t, CT_P2P_WAITALL, site, anchor, chain, count, requests);
    if (t.p != NULL) {
        int rc = PMPI_Waitall(count, requests, statuses);
        ct_wait_timed_end(&t);
        return rc;
    }
    ct_watchcall c;
    ct_watch_begin_own(&c, CT_P2P_WAITALL, site, anchor, t.chain, count, requests, t.own, t.t_in);
    int rc = PMPI_Waitall(count, requests, statuses);
    /* MPI_ERR_IN_STATUS: some completed; the followed ones are then not counted (rare) */
    ct_watch_end(&c, count, requests, rc == MPI_SUCCESS, rc == MPI_SUCCESS, -1, NULL, 0);
    return rc;
}

static CT_HOT_TEXT __attribute__((noinline)) int ct_watched_waitall(const void *site, int count,
                                                        MPI_Request requests[],
                                                        MPI_Status statuses[])
{
    const void *anchor = __builtin_frame_address(0), *chain = NULL;
    if (CT_LIKELY(!ct_light_due(CT_P2P_WAITALL)
                  && ct_wait_again(CT_P2P_WAITALL, site, anchor, count, requests, &chain)))
        return PMPI_Waitall(count, requests, statuses);
    return ct_waited_all_full(site, anchor, chain, count, requests, statuses);
}

CT_HOT_TEXT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Waitall(count, requests, statuses);
    if (CT_LIKELY(ct_light_call(CT_P2P_WAITALL)))   /* (as MPI_Wait's) */
        return PMPI_Waitall(count, requests, statuses);
    return ct_watched_waitall(ct_watch_site(__builtin_return_address(0)), count, requests, statuses);
}

static CT_LINE_START __attribute__((noinline)) int ct_watched_waitany(const void *site, int count,
                                                        MPI_Request requests[], int *index,
                                                        MPI_Status *status)
{
    const void *anchor = __builtin_frame_address(0), *chain;
    if (CT_LIKELY(ct_wait_again(CT_P2P_WAITANY, site, anchor, count, requests, &chain)))
        return PMPI_Waitany(count, requests, index, status);
    ct_wait_timing t;
    ct_wait_timed_begin(&t, CT_P2P_WAITANY, site, anchor, chain, count, requests);
    if (t.p != NULL) {
        int rc = PMPI_Waitany(count, requests, index, status);
        ct_wait_timed_end(&t);
        return rc;
    }
    ct_watchcall c;
    ct_watch_begin_own(&c, CT_P2P_WAITANY, site, anchor, t.chain, count, requests, t.own, t.t_in);
    int rc = PMPI_Waitany(count, requests, index, status);
    int done = rc == MPI_SUCCESS && *index != MPI_UNDEFINED ? *index : -1;
    ct_watch_end(&c, count, requests, done >= 0, 0, done, NULL, 0);
    return rc;
}

CT_LINE_START int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Waitany(count, requests, index, status);
    return ct_watched_waitany(ct_watch_site(__builtin_return_address(0)), count, requests, index,
                              status);
}

static CT_LINE_START __attribute__((noinline)) int ct_watched_waitsome(const void *site, int incount, MPI_Request requests[],
                                                         int *outcount, int indices[],
                                                         MPI_Status statuses[])
{
    const void *anchor = __builtin_frame_address(0), *chain;
    if (CT_LIKELY(ct_wait_again(CT_P2P_WAITSOME, site, anchor, incount, requests, &chain)))
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    ct_wait_timing t;
    ct_wait_timed_begin(&t, CT_P2P_WAITSOME, site, anchor, chain, incount, requests);
    if (t.p != NULL) {
        int rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
        ct_wait_timed_end(&t);
        return rc;
    }
    ct_watchcall c;
    ct_watch_begin_own(&c, CT_P2P_WAITSOME, site, anchor, t.chain, incount, requests, t.own, t.t_in);
    int rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    int n = rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED ? *outcount : 0;
    ct_watch_end(&c, incount, requests, n > 0, 0, -1, indices, n);
    return rc;
}

CT_LINE_START int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    return ct_watched_waitsome(ct_watch_site(__builtin_return_address(0)), incount, requests,
                               outcount, indices, statuses);
}

static __attribute__((noinline)) int ct_watched_test(const void *site, MPI_Request *request, int *flag,
                                                     MPI_Status *status)
{
    ct_watchcall c;
    ct_watch_begin(&c, CT_P2P_TEST, site, __builtin_frame_address(0), NULL, 1, request);
    int rc = PMPI_Test(request, flag, status);
    int done = rc == MPI_SUCCESS && *flag;
    ct_watch_end(&c, 1, request, done, done, -1, NULL, 0);
    return rc;
}

CT_OWN_TAIL_CALLS int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (CT_LIKELY(ct_poll_passes(CT_P2P_TEST)))
        return PMPI_Test(request, flag, status);
    return ct_watched_test(ct_watch_site(__builtin_return_address(0)), request, flag, status);
}

static __attribute__((noinline)) int ct_watched_testall(const void *site, int count, MPI_Request requests[],
                                                        int *flag, MPI_Status statuses[])
{
    ct_watchcall c;
    ct_watch_begin(&c, CT_P2P_TESTALL, site, __builtin_frame_address(0), NULL, count, requests);
    int rc = PMPI_Testall(count, requests, flag, statuses);
    int done = rc == MPI_SUCCESS && *flag;
    ct_watch_end(&c, count, requests, done, done, -1, NULL, 0);
    return rc;
}

CT_OWN_TAIL_CALLS int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (CT_LIKELY(ct_poll_passes(CT_P2P_TESTALL)))
        return PMPI_Testall(count, requests, flag, statuses);
    return ct_watched_testall(ct_watch_site(__builtin_return_address(0)), count, requests, flag,
                              statuses);
}

static __attribute__((noinline)) int ct_watched_testany(const void *site, int count, MPI_Request requests[],
                                                        int *index, int *flag, MPI_Status *status)
{
    ct_watchcall c;
    ct_watch_begin(&c, CT_P2P_TESTANY, site, __builtin_frame_address(0), NULL, count, requests);
    int rc = PMPI_Testany(count, requests, index, flag, status);
    int done = rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED ? *index : -1;
    ct_watch_end(&c, count, requests, done >= 0, 0, done, NULL, 0);
    return rc;
}

CT_OWN_TAIL_CALLS int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (CT_LIKELY(ct_poll_passes(CT_P2P_TESTANY)))
        return PMPI_Testany(count, requests, index, flag, status);
    return ct_watched_testany(ct_watch_site(__builtin_return_address(0)), count, requests, index,
                              flag, status);
}

static __attribute__((noinline)) int ct_watched_testsome(const void *site, int incount, MPI_Request requests[],
                                                         int *outcount, int indices[],
                                                         MPI_Status statuses[])
{
    ct_watchcall c;
    ct_watch_begin(&c, CT_P2P_TESTSOME, site, __builtin_frame_address(0), NULL, incount, requests);
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    int n = rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED ? *outcount : 0;
    ct_watch_end(&c, incount, requests, n > 0, 0, -1, indices, n);
    return rc;
}

CT_OWN_TAIL_CALLS int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (CT_LIKELY(ct_poll_passes(CT_P2P_TESTSOME)))
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    return ct_watched_testsome(ct_watch_site(__builtin_return_address(0)), incount, requests,
                               outcount, indices, statuses);
}

/* The learning mode's reward of a learned persistent request includes MPI_Start's own time:
 * read around the call only while it follows requests (CT_WATCH_LEARN). */
static inline uint64_t ct_start_ns(void)
{
    return ct_watch & CT_WATCH_LEARN ? ct_now() : 0;
}

static __attribute__((noinline)) int ct_watched_start(MPI_Request *request)
{
    uint64_t t0 = ct_watch_clock(), ns0 = ct_start_ns();
    int rc = PMPI_Start(request);
    if (rc == MPI_SUCCESS)
        ct_req_started(*request, t0, ns0 ? ct_now() - ns0 : 0, 1);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Start(request);
    return ct_watched_start(request);
}

static __attribute__((noinline)) int ct_watched_startall(int count, MPI_Request requests[])
{
    uint64_t t0 = ct_watch_clock(), ns0 = ct_start_ns();
    int rc = PMPI_Startall(count, requests);
    uint64_t own_ns = ns0 ? ct_now() - ns0 : 0;
    if (rc == MPI_SUCCESS)   /* its time is a request's own only if given it alone */
        for (int i = 0; i < count; i++)
            ct_req_started(requests[i], t0, own_ns, count == 1);
    return rc;
}

int MPI_Startall(int count, MPI_Request requests[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Startall(count, requests);
    return ct_watched_startall(count, requests);
}

static __attribute__((noinline)) int ct_watched_request_free(MPI_Request *request)
{
    MPI_Request before = *request;
    int rc = PMPI_Request_free(request);
    if (rc == MPI_SUCCESS)
        ct_req_freed(before);
    return rc;
}

int MPI_Request_free(MPI_Request *request)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Request_free(request);
    return ct_watched_request_free(request);
}

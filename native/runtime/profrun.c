/*
 * Profiling mode (COLLTUNE_PROFILE_RUN): see ct_profrun.h for what is recorded.
 *
 * Call path: fixed open-addressing tables of relaxed atomic counters (MPI_THREAD_MULTIPLE safe,
 * no lock). A slot is claimed once by CAS on its state; when a table is full the call is only
 * counted in `lost` (written out, so the front end can say what it misses). A call site's last
 * call is memoised per thread (ct_memo): a loop's repetitions skip the size, the slot lookup and
 * the pattern comparison, and only one in CT_TIME_EVERY reads the clock. (The clock is
 * profclock.c's, the environment written at MPI_Finalize profenv.c's.)
 *
 * Sampling must be identical on all ranks of a communicator, or the inserted synchronisation
 * would deadlock: profcomm.c decides it from per-communicator call numbers, the same on all ranks.
 * Below MPI_THREAD_MULTIPLE the counters are updated with plain loads and stores (no locked
 * instruction on the call path): one thread at a time calls MPI.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ct_core.h"
#include "ct_formats.h"
#include "ct_profrun.h"
#include "ct_runtime.h"
#include "ct_settings.h"

CT_HIDDEN unsigned char ct_p2p_on;
CT_HIDDEN unsigned char ct_profrun_on;
CT_HIDDEN _Thread_local const void *ct_profrun_site;
CT_HIDDEN _Thread_local const void *ct_profrun_caller;
CT_HIDDEN _Thread_local int ct_profrun_inside;

#define CT_COLL_SLOTS 4096
#define CT_P2P_SLOTS 1024
#define CT_HOT 16            /* per thread: the slots used last, by call site */
/* Every call is counted; its time is taken for the first CT_TIME_ALL calls of each point and
 * then for one call in CT_TIME_EVERY on average (gaps CT_TIME_EVERY/2 .. 3 CT_TIME_EVERY/2 from
 * a per-thread xorshift, so no cycle of the application's calls is missed), and for every
 * sampled call. Two TSC reads are ~80 cycles here; on ExaML (a synchronous Reduce/Bcast round
 * trip, 1.36 M calls per rank in ~6 s) every call's clock reads alone were ~1.5% of the run.
 * The front end scales a point's timed total by calls / timed. */
#define CT_TIME_ALL 64
#define CT_TIME_EVERY 16
_Static_assert((CT_COLL_SLOTS & (CT_COLL_SLOTS - 1)) == 0 && (CT_P2P_SLOTS & (CT_P2P_SLOTS - 1)) == 0
                   && (CT_HOT & (CT_HOT - 1)) == 0, "table sizes are powers of two (masks)");

/* One (collective or p2p call, site, communicator size, log2 bytes) point. No padding: the
 * key is compared and copied as bytes (ct_table_probe). */
typedef struct ct_key {
    const void *site;
    int kind;                         /* ct_coll_id or ct_p2p_call */
    int nprocs;                       /* communicator size (0 for p2p) */
    int bin;                          /* floor(log2(bytes)), -1 for 0 bytes */
    int zero;
} ct_key;
_Static_assert(sizeof(ct_key) == sizeof(void *) + 4 * sizeof(int), "ct_key has no padding");

/* Minima are kept as their bitwise complement under a maximum, so that a zeroed slot means "none
 * yet" and a claimed slot needs nothing but its key. */
typedef struct ct_slot {
    atomic_int state;                 /* 0 empty, 1 being claimed, 2 ready (ct_table_probe) */
    ct_key key;
    atomic_ullong calls, bytes, bytes_min_not, bytes_max;
    atomic_ullong timed, timed_ns, max_ns;   /* the calls whose time was taken (ct_time_this) */
    atomic_ullong samples, sample_own_ns, sample_wait_ns, sample_wait_min_not;
} ct_slot;

static ct_slot ct_coll_slots[CT_COLL_SLOTS];
static ct_slot ct_p2p_slots[CT_P2P_SLOTS];
static atomic_ullong ct_coll_lost, ct_p2p_lost;   /* calls counted in the overflow slots */

static char ct_dir[4096];
static int ct_rank_, ct_nprocs_;
static int ct_keyval_ok;                          /* profcomm.c's keyval was created */
static int ct_mt;                                 /* MPI_THREAD_MULTIPLE: atomic updates */
static unsigned long ct_every;                    /* sample every N-th call at least, 0: never */
static uint64_t ct_budget_ppm;                    /* agreed sampling budget, 0: none */
/* ct_active as the other modes set it: collectives no mode serves go straight to the library,
 * without ct_dispatch's decision path (its queries are the larger part of a profiled call). */
static unsigned char ct_served[CT_NUM_COLLECTIVES];
static int ct_profrun_wanted;                    /* COLLTUNE_PROFILE_RUN set on this rank */
static double ct_ns_per_tick = 1.0;   /* MPI_Finalize's: the run's own rate */

/* Ticks to nanoseconds at MPI_Finalize (the run's own rate). */
static unsigned long long ct_ns(unsigned long long ticks)
{
    return (unsigned long long)((double)ticks * ct_ns_per_tick + 0.5);
}

int64_t ct_profrun_bytes(int count, MPI_Datatype type)
{
    int size;
    if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS)
        return 0;
    return (int64_t)count * size;
}

static int ct_bin(int64_t bytes)
{
    return bytes <= 0 ? -1 : 63 - __builtin_clzll((unsigned long long)bytes);
}

static void ct_max(atomic_ullong *m, uint64_t v)
{
    unsigned long long cur = atomic_load_explicit(m, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

/* Find or claim the slot of a point; NULL (and `lost` counted) when the table is full. */
static ct_slot *ct_find(ct_slot *table, size_t n, atomic_ullong *lost, const ct_key *key)
{
    uint64_t h = ((uint64_t)(uintptr_t)key->site * 0x9E3779B97F4A7C15ull)
                 ^ ((uint64_t)key->kind << 40 ^ (uint64_t)(key->bin + 1) << 32 ^ (uint64_t)key->nprocs);
    h ^= h >> 29;
    ct_slot *s = ct_table_probe(table, n, sizeof *table, h, offsetof(ct_slot, key), key, sizeof *key);
    if (s == NULL)
        atomic_fetch_add_explicit(lost, 1, memory_order_relaxed);
    return s;
}

/* This thread's slots used last, one per hash of (site, kind, bin): a loop's calls find theirs
 * with one load and four compares instead of a hash and a probe of the shared table. */
static _Thread_local ct_slot *ct_hot[CT_HOT] __attribute__((tls_model("initial-exec")));

static inline ct_slot *ct_coll_slot(const void *site, int kind, int nprocs, int bin)
{
    ct_key key = {site, kind, nprocs, bin, 0};
    unsigned i = (unsigned)(((uintptr_t)site >> 2) ^ (uintptr_t)kind ^ (uintptr_t)bin) & (CT_HOT - 1);
    ct_slot *s = ct_hot[i];
    if (CT_LIKELY(s != NULL && memcmp(&s->key, &key, sizeof key) == 0))
        return s;
    s = ct_find(ct_coll_slots, CT_COLL_SLOTS, &ct_coll_lost, &key);
    if (s != NULL)
        ct_hot[i] = s;
    return s;
}

static inline void ct_bump(atomic_ullong *x, uint64_t v)
{
    if (ct_mt)
        atomic_fetch_add_explicit(x, v, memory_order_relaxed);
    else
        atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + v,
                              memory_order_relaxed);
}

static inline void ct_count(ct_slot *s, int64_t bytes)
{
    uint64_t b = (uint64_t)(bytes > 0 ? bytes : 0);
    ct_bump(&s->calls, 1);
    ct_bump(&s->bytes, b);
    /* a slot holds one log2 bin: the exact range inside it (the CAS only when it widens) */
    if (~b > atomic_load_explicit(&s->bytes_min_not, memory_order_relaxed))
        ct_max(&s->bytes_min_not, ~b);
    if (b > atomic_load_explicit(&s->bytes_max, memory_order_relaxed))
        ct_max(&s->bytes_max, b);
}

static void ct_time(ct_slot *s, uint64_t ticks)
{
    ct_bump(&s->timed, 1);
    ct_bump(&s->timed_ns, ticks);
    ct_max(&s->max_ns, ticks);
}

/* Which calls are timed (see CT_TIME_EVERY): this thread's countdown to the next timed call. */
static _Thread_local uint32_t ct_time_left __attribute__((tls_model("initial-exec")));
static _Thread_local uint32_t ct_time_rng __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) void ct_time_rearm(void)
{
    uint32_t x = ct_time_rng ? ct_time_rng : (0x9E3779B9u ^ (uint32_t)(uintptr_t)&ct_time_rng) | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    ct_time_rng = x;
    ct_time_left = CT_TIME_EVERY / 2 + x % (CT_TIME_EVERY + 1);
}

static inline int ct_time_this(const ct_slot *s)
{
    if (atomic_load_explicit(&s->calls, memory_order_relaxed) < CT_TIME_ALL)
        return 1;
    if (CT_LIKELY(ct_time_left > 1)) {
        ct_time_left--;
        return 0;
    }
    ct_time_rearm();
    return 1;
}

void ct_profrun_p2p(ct_p2p_call call, const void *site, int64_t bytes, uint64_t ns)
{
    ct_profrun_seq++;
    if ((int64_t)ns < 0)
        ns = 0;   /* ticks read on two cores a hair apart */
    ct_key key = {site, (int)call, 0, ct_bin(bytes), 0};
    ct_slot *s = ct_find(ct_p2p_slots, CT_P2P_SLOTS, &ct_p2p_lost, &key);
    if (s != NULL) {
        ct_count(s, bytes);
        ct_time(s, ns);
    }
}

/* A collective's bytes before the call for the count * size(type) collectives (ct_bytes_forms),
 * the size cached per thread for predefined types (ct_type_size); -2: known only after the
 * call, which reports a null datatype or negative count itself (a size query of
 * MPI_DATATYPE_NULL would raise the error on MPI_COMM_WORLD instead of the caller's). */
static inline int64_t ct_bytes_before(const ct_call *call)
{
    ct_bytes_form form = ct_bytes_forms[call->coll];
    if (form.count_at < 0)
        return -2;
    int count;
    MPI_Datatype type;
    memcpy(&count, (const char *)call + form.count_at, sizeof count);
    memcpy(&type, (const char *)call + form.type_at, sizeof type);
    int64_t size;
    if (count < 0 || type == MPI_DATATYPE_NULL || ct_type_size(type, &size) != MPI_SUCCESS)
        return -2;
    return (int64_t)count * size;
}

/* The library, or the mode that serves the call (not re-entered: ct_profrun_inside). */
static inline int ct_serve(int kind, const ct_call *call, MPI_Comm comm)
{
    ct_profrun_inside = 1;
    int rc = call == NULL       ? PMPI_Barrier(comm)
             : ct_served[kind] ? ct_dispatch(call)
                               : colltune_invoke_library(call);
    ct_profrun_inside = 0;
    return rc;
}

/* The end of a call's record: its time where it was timed (ticks, converted at MPI_Finalize).
 * The application's time in the call includes the inserted synchronisation: on a sampled call
 * the wait for late ranks moved there from the collective. */
static void ct_timed(ct_slot *s, uint64_t ns, int sampled, uint64_t wait)
{
    if ((int64_t)ns < 0)
        ns = 0;   /* ticks read on two cores a hair apart */
    ct_time(s, wait + ns);
    if (sampled) {
        ct_bump(&s->samples, 1);
        ct_bump(&s->sample_own_ns, ns);
        ct_bump(&s->sample_wait_ns, wait);
        ct_max(&s->sample_wait_min_not, ~wait);
    }
}

/* A call site's last call, per thread: when the same call comes again (a loop), everything
 * derived from its arguments is taken from here, its point's slot, size and fingerprint, and
 * the pattern it makes with the call before it (ct_pat_memo); its repetitions are counted here
 * and added to the shared counters when the entry is reused and at MPI_Finalize, so that a
 * repetition touches two cache lines of it (ExaML computes ~9 us between its pairs: every line
 * a call touches is a cache miss there). Only calls whose derived data depends on nothing else:
 * count * size of a predefined datatype (never freed, so its handle always means the same type)
 * or MPI_Barrier, on a communicator whose state is still the one seen (generation). Allocated
 * per thread at its first memoised call, kept in a list for MPI_Finalize; never under
 * MPI_THREAD_MULTIPLE (one thread at a time calls MPI otherwise, so plain increments do). */
typedef struct __attribute__((aligned(64))) ct_memo {
    /* the key (not the buffers: applications reduce into other buffers from call to call, ExaML
     * almost every time) and the timing countdown: one cache line */
    const void *site;
    MPI_Comm comm;
    MPI_Datatype type;
    MPI_Op op;
    unsigned generation;
    int kind, count, root;
    uint32_t time_all;            /* repetitions still timed: the point's first CT_TIME_ALL */
    /* what a repetition reads and counts: one cache line */
    uint64_t __attribute__((aligned(64))) id;   /* of the fingerprint (profcomm.c); 0: empty */
    ct_slot *slot;
    int64_t bytes;
    uint64_t calls, pairs;        /* repetitions, and pattern pairs, not yet in the counters */
    ct_pat_memo pattern;
    ct_fingerprint fp;            /* its buffers rewritten by every repetition */
} ct_memo;
_Static_assert(offsetof(ct_memo, id) == 64 && offsetof(ct_memo, fp) == 128, "ct_memo's hot lines");
#define CT_MEMOS 16
typedef struct ct_memo_block {
    ct_memo memos[CT_MEMOS];
    struct ct_memo_block *next;
} ct_memo_block;
static _Thread_local ct_memo *ct_memos __attribute__((tls_model("initial-exec")));
static _Atomic(ct_memo_block *) ct_memo_blocks;   /* every thread's, for MPI_Finalize */

static inline ct_memo *ct_memo_at(ct_memo *memos, const void *site, int kind)
{
    return &memos[(((uintptr_t)site >> 2) ^ (uintptr_t)kind) & (CT_MEMOS - 1)];
}

/* The communicator and its state's generation stand for the state. (The kind too is compared:
 * one call instruction through a function pointer may call MPI_Allreduce and
 * MPI_Reduce_scatter_block, whose signatures are the same.) */
static inline int ct_memo_is(const ct_memo *m, const void *site, int kind, const ct_call *call,
                             MPI_Comm comm)
{
    if (m->site != site || m->kind != kind || m->comm != comm
        || m->generation != ct_profcomm_cache.generation)
        return 0;
    return call == NULL
           || (m->count == call->recvcount && m->type == call->recvtype && m->root == call->root
               && m->op == call->op);
}

/* Can this successful call be memoised? Its size from recvcount and recvtype alone, whose size
 * ct_type_size cached as a named (predefined) type. */
static int ct_memoisable(int kind, const ct_call *call)
{
    if (call == NULL)
        return 1;
    ct_bytes_form form = ct_bytes_forms[kind];
    if (form.count_at != (signed char)offsetof(ct_call, recvcount)
        || form.type_at != (signed char)offsetof(ct_call, recvtype))
        return 0;
    const ct_tsize *e = &ct_tsizes[ct_tslot(call->recvtype)];
    return e->type == call->recvtype && e->tag > 1;
}

/* An entry's repetitions into the shared counters (before it is reused, and at MPI_Finalize). */
static void ct_memo_flush(ct_memo *m)
{
    if (m->calls > 0) {
        ct_bump(&m->slot->calls, m->calls);
        ct_bump(&m->slot->bytes, m->calls * (uint64_t)m->bytes);
        m->calls = 0;
    }
    if (m->pairs > 0) {
        ct_pat_bump(m->pattern.slot, m->pairs, m->pairs * (uint64_t)m->bytes);
        m->pairs = 0;
    }
}

static ct_memo *ct_memo_new(int kind, const ct_call *call, const void *site, MPI_Comm comm,
                            ct_slot *slot, int64_t bytes)
{
    if (ct_mt)
        return NULL;   /* the repetitions' counters are not atomic */
    if (ct_memos == NULL) {
        ct_memo_block *b = aligned_alloc(64, sizeof *b);
        if (b == NULL)
            return NULL;
        memset(b, 0, sizeof *b);
        b->next = atomic_load_explicit(&ct_memo_blocks, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&ct_memo_blocks, &b->next, b,
                                                      memory_order_release, memory_order_relaxed)) {
        }
        ct_memos = b->memos;
    }
    ct_memo *m = ct_memo_at(ct_memos, site, kind);
    if (m->id != 0)
        ct_memo_flush(m);
    m->site = site;
    m->kind = kind;
    m->comm = comm;
    m->generation = ct_profcomm_cache.generation;
    if (call != NULL) {
        m->count = call->recvcount;
        m->type = call->recvtype;
        m->root = call->root;
        m->op = call->op;
    }
    m->slot = slot;
    m->bytes = bytes;
    uint64_t seen = atomic_load_explicit(&slot->calls, memory_order_relaxed);
    m->time_all = seen < CT_TIME_ALL ? (uint32_t)(CT_TIME_ALL - seen) : 0;
    return m;
}

static void ct_memo_flush_all(void)
{
    for (ct_memo_block *b = atomic_load(&ct_memo_blocks); b != NULL; b = b->next)
        for (int i = 0; i < CT_MEMOS; i++)
            if (b->memos[i].id != 0)
                ct_memo_flush(&b->memos[i]);
}

/* Every call that is not a memoised one's repetition: sizes, slots and fingerprints derived from
 * the arguments (and the memo made where it can be). */
static __attribute__((noinline)) int ct_profiled_full(int kind, const ct_call *call,
                                                      MPI_Comm comm, const void *site,
                                                      uint64_t seq, ct_pcomm *st, int sampled,
                                                      uint64_t wait)
{
    int nprocs = 0;
    if (st != NULL)
        nprocs = st->nprocs;
    else if (comm != MPI_COMM_NULL)
        PMPI_Comm_size(comm, &nprocs);
    int64_t bytes = call == NULL ? 0 : ct_bytes_before(call);
    ct_slot *s = bytes >= 0 ? ct_coll_slot(site, kind, nprocs, ct_bin(bytes)) : NULL;
    int timed = sampled || s == NULL || ct_time_this(s);
    uint64_t t0 = timed ? ct_profrun_ticks() : 0;
    int rc = ct_serve(kind, call, comm);
    uint64_t ns = timed ? ct_profrun_ticks() - t0 : 0;
    if (CT_UNLIKELY(rc != MPI_SUCCESS || bytes < 0)) {
        /* Sizes only of calls that succeeded: an erroneous call may carry MPI_DATATYPE_NULL,
         * whose size query would raise the error on MPI_COMM_WORLD instead of the caller's. */
        bytes = rc != MPI_SUCCESS ? -1 : colltune_call_bytes(call);
        s = ct_coll_slot(site, kind, nprocs, ct_bin(bytes));
    }
    if (st != NULL && rc == MPI_SUCCESS) {
        ct_memo *m = s != NULL && ct_memoisable(kind, call)
                         ? ct_memo_new(kind, call, site, comm, s, bytes)
                         : NULL;
        /* the memo entry keeps the fingerprint, else the communicator's state (NULLs) */
        ct_profcomm_after(st, m ? &m->fp : NULL, m ? &m->id : NULL, m ? &m->pattern : NULL, kind,
                          site, call, bytes, seq);
    }
    if (s != NULL) {
        ct_count(s, bytes);
        if (timed)
            ct_timed(s, ns, sampled, wait);
    }
    return rc;
}

/* A memoised call's repetition failed: counted without a size, as any failed call. */
static __attribute__((noinline)) void ct_failed(int kind, const void *site, int nprocs,
                                                int timed, uint64_t ns, int sampled, uint64_t wait)
{
    ct_slot *s = ct_coll_slot(site, kind, nprocs, -1);
    if (s != NULL) {
        ct_count(s, -1);
        if (timed)
            ct_timed(s, ns, sampled, wait);
    }
}

/* One collective call (call == NULL: MPI_Barrier): counted, sampled, timed where due, recorded.
 * The common case is a loop's call again: its memo has its slot, size and pattern, and what is
 * left is a counter bump, the fingerprint's turn as the previous call, and the clock on one call
 * in CT_TIME_EVERY. */
static inline __attribute__((always_inline)) int ct_profiled(int kind, const ct_call *call,
                                                             MPI_Comm comm, const void *site)
{
    uint64_t seq = ++ct_profrun_seq;
    ct_pcomm *st = ct_profcomm_state(comm);
    uint64_t wait = 0;
    int sampled = st != NULL && ct_profcomm_due(st) && ct_profcomm_sync(st, comm, &wait);
    ct_memo *m = ct_memos;   /* NULL under MPI_THREAD_MULTIPLE: its atomic counters */
    if (CT_UNLIKELY(st == NULL || m == NULL
                    || !ct_memo_is(m = ct_memo_at(m, site, kind), site, kind, call, comm)))
        return ct_profiled_full(kind, call, comm, site, seq, st, sampled, wait);
    int timed = sampled;
    if (CT_UNLIKELY(m->time_all > 0)) {
        m->time_all--;
        timed = 1;
    } else if (CT_UNLIKELY(ct_time_left <= 1)) {
        ct_time_rearm();
        timed = 1;
    } else {
        ct_time_left--;
    }
    uint64_t t0 = timed ? ct_profrun_ticks() : 0;
    int rc = ct_serve(kind, call, comm);
    uint64_t ns = timed ? ct_profrun_ticks() - t0 : 0;
    if (CT_UNLIKELY(rc != MPI_SUCCESS)) {
        ct_failed(kind, site, st->nprocs, timed, ns, sampled, wait);
        return rc;
    }
    m->calls++;   /* into the slot at the entry's flush; its size, so its range, is the same */
    if (call != NULL)
        ct_fingerprint_buffers(&m->fp, st, kind, call);
    ct_profcomm_repeat(st, &m->fp, &m->id, &m->pattern, &m->pairs, m->bytes, seq);
    if (timed)
        ct_timed(m->slot, ns, sampled, wait);
    return rc;
}

int ct_profrun_dispatch(const struct ct_call *call)
{
    return ct_profiled(call->coll, call, call->comm,
                       ct_profrun_caller != NULL ? ct_profrun_caller : ct_profrun_site);
}

int ct_profrun_served(int coll)
{
    return coll >= 0 && coll < CT_NUM_COLLECTIVES && ct_served[coll];
}

int ct_profrun_barrier(MPI_Comm comm, const void *site)
{
    return ct_profiled(CT_PR_BARRIER, NULL, comm, site);
}

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
    /* Created before the agreement: a rank that cannot have one offers 0, the ranks then
     * disagree, and nobody samples (rather than a synchronisation on some ranks only). */
    ct_keyval_ok = ct_profrun_wanted && ct_profcomm_prepare();
    if (!ct_keyval_ok)
        n = 0;
    slots[CT_PR_SAMPLE] = (uint64_t)n;
    slots[CT_PR_SAMPLE_NOT] = ~(uint64_t)n;
    slots[CT_PR_BUDGET] = (uint64_t)(budget > 0 ? budget : 0);
    slots[CT_PR_BUDGET_NOT] = ~slots[CT_PR_BUDGET];
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
    ct_mt = level == MPI_THREAD_MULTIPLE;
    strcpy(ct_dir, dir);
    mkdir(ct_dir, 0777);   /* every rank tries; EEXIST is fine, other errors show at Finalize */
    ct_rank_ = rank;
    ct_nprocs_ = nprocs;
    ct_profenv_read_maps();
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        ct_served[c] = ct_active[c];
        ct_active[c] = 1;
    }
    ct_profrun_on = 1;
    ct_p2p_on = 1;
    ct_profrun_clock_start();
    ct_profcomm_start(every, agreed[CT_PR_BUDGET], ct_profrun_ns_init, ct_mt);
}

/* ---- MPI_Finalize: environment and tables to dir/rank-N -------------------------------------- */

static void ct_write_slots(FILE *out, ct_slot *table, size_t n, int coll)
{
    for (size_t i = 0; i < n; i++) {
        ct_slot *s = &table[i];
        if (atomic_load(&s->state) != 2 || atomic_load(&s->calls) == 0)
            continue;
        unsigned long long samples = atomic_load(&s->samples);
        unsigned long long calls = atomic_load(&s->calls);
        const ct_key *k = &s->key;
        _Static_assert(CT_PROFRUN_POINT_FIELDS == 15, "formats.toml's point line: update the writer");
        fprintf(out, "%s " CT_PROFRUN_POINT_FORMAT "\n", coll ? "coll" : "p2p",
                !coll ? ct_p2p_names[k->kind]
                      : k->kind == CT_PR_BARRIER ? "barrier" : colltune_collective_name(k->kind),
                k->site, k->nprocs, k->bin, calls, atomic_load(&s->timed),
                ct_ns(atomic_load(&s->timed_ns)), ct_ns(atomic_load(&s->max_ns)),
                atomic_load(&s->bytes), samples, ct_ns(atomic_load(&s->sample_own_ns)),
                ct_ns(atomic_load(&s->sample_wait_ns)),
                samples ? ct_ns(~atomic_load(&s->sample_wait_min_not)) : 0ull,
                ~atomic_load(&s->bytes_min_not), atomic_load(&s->bytes_max));
    }
}

void ct_profrun_finish(void)
{
    if (!ct_profrun_on)
        return;
    uint64_t wall = ct_profrun_ns() - ct_profrun_ns_init;
    ct_ns_per_tick = ct_profrun_ns_per_tick();
    ct_profrun_on = 0;
    ct_p2p_on = 0;
    ct_memo_flush_all();
    ct_profcomm_finish();
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
    fprintf(out, "lost %llu %llu\n", (unsigned long long)atomic_load(&ct_coll_lost),
            (unsigned long long)atomic_load(&ct_p2p_lost));
    ct_write_slots(out, ct_coll_slots, CT_COLL_SLOTS, 1);
    ct_write_slots(out, ct_p2p_slots, CT_P2P_SLOTS, 0);
    ct_profcomm_write(out, ct_ns_per_tick);
    fprintf(out, "end\n");
    if (fclose(out) != 0 || rename(tmp, path) != 0)
        ct_message("warning: COLLTUNE_PROFILE_RUN: cannot write %s: %s", path, strerror(errno));
}

/*
 * Profiling mode (COLLTUNE_PROFILE_RUN), the call path: see ct_profrun.h for what is recorded.
 * The generated wrappers hand a collective here (ct_profrun_dispatch) instead of to ct_dispatch
 * while profiling; it is timed, sampled and recorded here and served by ct_dispatch (modes.c)
 * where another mode serves it, else by the library (MPI_Barrier too: a row of the table).
 *
 * Fixed hashed tables of relaxed atomic counters (MPI_THREAD_MULTIPLE safe, no lock; dense
 * entries: ct_table_probe). An entry is claimed once by CAS on its cell; when a table is full
 * the call is only counted in `lost` (written out, so the front end can say what it misses). A call site's last
 * call is memoised per thread (ct_memo): a loop's repetitions skip the size, the slot lookup and
 * the pattern comparison, and only one in CT_TIME_EVERY reads the clock. (The clock is
 * profclock.c's, the per-communicator state profcomm.c's; MPI_Finalize's file is profrun.c's.)
 *
 * Sampling must be identical on all ranks of a communicator, or the inserted synchronisation
 * would deadlock: profcomm.c decides it from per-communicator call numbers, the same on all ranks.
 * Below MPI_THREAD_MULTIPLE the counters are updated with plain loads and stores (no locked
 * instruction on the call path): one thread at a time calls MPI.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ct_tls.h"
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_core.h"
#include "ct_formats.h"
#include "ct_profrun_impl.h"
#include "ct_runtime.h"
#include "ct_watch.h"

#define CT_HOT 16            /* per thread: the slots used last, by call site */
/* Every call is counted; its time is taken for the first CT_TIME_ALL calls of each point and
 * then for one call in CT_TIME_EVERY on average (gaps CT_TIME_EVERY/2 .. 3 CT_TIME_EVERY/2 from
 * a per-thread xorshift, so no cycle of the application's calls is missed), and for every
 * sampled call. Two TSC reads are ~80 cycles here; on ExaML (a synchronous Reduce/Bcast round
 * trip, 1.36 M calls per rank in ~6 s) every call's clock reads alone were ~1.5% of the run.
 * The front end scales a point's timed total by calls / timed. */
_Static_assert((CT_HOT & (CT_HOT - 1)) == 0, "a power of two (a mask)");

CT_HIDDEN ct_point ct_coll_slots[CT_COLL_SLOTS];
CT_HIDDEN ct_point ct_p2p_slots[CT_P2P_SLOTS];
CT_HIDDEN atomic_ullong ct_coll_lost, ct_p2p_lost;
static atomic_uint ct_coll_cells[CT_COLL_SLOTS], ct_p2p_cells[CT_P2P_SLOTS];
CT_HIDDEN ct_table ct_coll_table = {0, ct_coll_cells}, ct_p2p_table = {0, ct_p2p_cells};

/* This thread's intercepted MPI calls, numbered (1, 2, ...): "directly after" for patterns
 * (ct_seq: a field of the thread's hot line, ct_profrun_me). */

int64_t ct_profrun_bytes(int count, MPI_Datatype type)
{
    int64_t size;   /* predefined types' sizes cached per thread (ct_type_size) */
    if (count <= 0 || type == MPI_DATATYPE_NULL || ct_type_size(type, &size) != MPI_SUCCESS)
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
static ct_point *ct_find(ct_point *table, size_t n, atomic_ullong *lost, const ct_point_key *key)
{
    uint64_t h = ((uint64_t)(uintptr_t)key->site * 0x9E3779B97F4A7C15ull)
                 ^ ((uint64_t)key->kind << 40 ^ (uint64_t)(key->bin + 1) << 32 ^ (uint64_t)key->nprocs);
    h ^= h >> 29;
    ct_point *s = ct_table_probe(table, table == ct_coll_slots ? &ct_coll_table : &ct_p2p_table, n,
                                 sizeof *table, h, offsetof(ct_point, key), key, sizeof *key);
    if (s == NULL)
        atomic_fetch_add_explicit(lost, 1, memory_order_relaxed);
    return s;
}

/* This thread's slots used last, one per hash of (site, kind, bin): a loop's calls find theirs
 * with one load and four compares instead of a hash and a probe of the shared table. */
static _Thread_local ct_point *ct_hot[CT_HOT] CT_TLS_MODEL;

static _Thread_local ct_point *ct_hot_p2p[CT_HOT] CT_TLS_MODEL;

static inline ct_point *ct_slot(ct_point **hot, ct_point *table, size_t n, atomic_ullong *lost,
                                const ct_point_key *key)
{
    unsigned i = (unsigned)(((uintptr_t)key->site >> 2) ^ (uintptr_t)key->kind ^ (uintptr_t)key->bin)
                 & (CT_HOT - 1);
    ct_point *s = hot[i];
    if (CT_LIKELY(s != NULL && memcmp(&s->key, key, sizeof *key) == 0))
        return s;
    s = ct_find(table, n, lost, key);
    if (s != NULL)
        hot[i] = s;
    return s;
}

static inline ct_point *ct_coll_slot(const void *site, int kind, int nprocs, int bin)
{
    ct_point_key key = {site, kind, nprocs, bin, 0};
    return ct_slot(ct_hot, ct_coll_slots, CT_COLL_SLOTS, &ct_coll_lost, &key);
}

static inline void ct_bump(atomic_ullong *x, uint64_t v)
{
    if (ct_profrun_mt)
        atomic_fetch_add_explicit(x, v, memory_order_relaxed);
    else
        atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + v,
                              memory_order_relaxed);
}

static inline void ct_count(ct_point *s, int64_t bytes)
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

static void ct_time(ct_point *s, uint64_t ticks)
{
    ct_bump(&s->timed, 1);
    ct_bump(&s->timed_ns, ticks);
    ct_max(&s->max_ns, ticks);
}

/* Which calls are timed (see CT_TIME_EVERY): this thread's countdown to the next timed call
 * (the watched Wait/Test path counts down on it too: ct_own_begin). */
static _Thread_local uint32_t ct_time_rng CT_TLS_MODEL;   /* (ct_time_left: ct_profrun_me) */

__attribute__((noinline)) void ct_time_rearm(void)
{
    ct_light_start_due();   /* (here: every ~16 calls of the full path ask) */
    uint32_t x = ct_time_rng ? ct_time_rng : (0x9E3779B9u ^ (uint32_t)(uintptr_t)&ct_time_rng) | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    ct_time_rng = x;
    ct_time_left = CT_TIME_EVERY / 2 + x % (CT_TIME_EVERY + 1);
}

/* 0: not timed; 1: timed (a point's first CT_TIME_ALL); 2: timed by the countdown (then it also
 * measures the call path's own time for the budget: ct_own_add). */
static inline int ct_time_this(const ct_point *s)
{
    if (atomic_load_explicit(&s->calls, memory_order_relaxed) < CT_TIME_ALL)
        return 1;
    if (CT_LIKELY(ct_time_left > 1)) {
        ct_time_left--;
        return 0;
    }
    ct_time_rearm();
    return 2;
}

void ct_profrun_p2p(ct_p2p_call call, const void *site, int64_t bytes, uint64_t ns)
{
    ct_seq++;
    if ((int64_t)ns < 0)
        ns = 0;   /* ticks read on two cores a hair apart */
    ct_point_key key = {ct_profchain_site(site, __builtin_frame_address(0)), (int)call, 0,
                        ct_bin(bytes), 0};
    ct_point *s = ct_find(ct_p2p_slots, CT_P2P_SLOTS, &ct_p2p_lost, &key);
    if (s != NULL) {
        ct_count(s, bytes);
        ct_time(s, ns);
    }
}

ct_point *ct_profrun_p2p_slot(ct_p2p_call call, const void *chain)
{
    ct_point_key key = {chain, (int)call, 0, -1, 0};
    return ct_slot(ct_hot_p2p, ct_p2p_slots, CT_P2P_SLOTS, &ct_p2p_lost, &key);
}

void ct_profrun_p2p_record(ct_point *s, uint64_t ticks)
{
    ct_seq++;
    if (s != NULL) {
        ct_count(s, 0);
        ct_time(s, (int64_t)ticks < 0 ? 0 : ticks);   /* ticks read on two cores a hair apart */
    }
}

void ct_profrun_p2p_count(ct_point *s)
{
    ct_count(s, 0);
}

void ct_profrun_p2p_add(ct_point *s, uint64_t calls, uint64_t timed, uint64_t ticks, uint64_t max)
{
    ct_count(s, 0);   /* its range: 0 bytes */
    ct_bump(&s->calls, calls - 1);
    ct_bump(&s->timed, timed);
    ct_bump(&s->timed_ns, ticks);
    ct_max(&s->max_ns, max);
}

ct_point *ct_profrun_watched(int kind, const void *site, int nprocs, int64_t bytes, uint64_t ticks)
{
    ct_seq++;
    if ((int64_t)ticks < 0)
        ticks = 0;   /* ticks read on two cores a hair apart */
    ct_point *s = ct_coll_slot(ct_profchain_site(site, __builtin_frame_address(0)), kind, nprocs,
                               ct_bin(bytes));
    if (s != NULL) {
        ct_count(s, bytes);
        ct_time(s, ticks);
    }
    return s;
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

/* The library, or the mode that serves the call (not re-entered: ct_profrun_inside). The
 * library's MPI_Allreduce directly, as colltune_invoke_library makes it: the reductions of an
 * iterative solver are most of a profiled code's collectives (OpenFOAM: 3,782 of 3,785), and the
 * catalog's switch behind its PLT entry was ~10 instructions a call. */
static inline void ct_inside(int on)
{
    ct_profrun_inside = on;
    if (!ct_profrun_mt)   /* (the collectives' light path reads its copy in their hot line) */
        ct_coll_line.inside = (unsigned char)on;
}

static inline int ct_serve(int kind, const ct_call *call, MPI_Comm comm)
{
    ct_inside(1);
    int rc = call == NULL                 ? PMPI_Barrier(comm)
             : ct_profrun_by_modes[kind] ? ct_dispatch(call)
             : kind == CT_COLL_ALLREDUCE
                 ? PMPI_Allreduce(call->sendbuf, call->recvbuf, call->recvcount, call->recvtype,
                                  call->op, comm)
                 : colltune_invoke_library(call);
    ct_inside(0);
    return rc;
}

/* The end of a call's record: its time where it was timed (ticks, converted at MPI_Finalize).
 * The application's time in the call includes the inserted synchronisation: on a sampled call
 * the wait for late ranks moved there from the collective. */
static void ct_timed(ct_point *s, uint64_t ns, int sampled, uint64_t wait)
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
 * per thread at its first memoised call, kept in a list for MPI_Finalize (flushed and freed
 * there: ct_profcall_finish); never under
 * MPI_THREAD_MULTIPLE (one thread at a time calls MPI otherwise, so plain increments do). */
typedef struct __attribute__((aligned(64))) ct_memo {
    /* the key (not the buffers: applications reduce into other buffers from call to call, ExaML
     * almost every time), the timing countdown, the state and the fingerprint's id: one cache
     * line */
    const void *site;
    MPI_Comm comm;
    MPI_Datatype type;
    MPI_Op op;
    ct_pcomm *st;                 /* the communicator's state (valid with the generation) */
    uint64_t id;                  /* of the fingerprint (profcomm.c); 0: empty */
    unsigned generation;
    int count, root;
    uint16_t kind;                /* a collective's id (ct_coll_id, CT_PR_BARRIER) */
    uint16_t time_all;            /* repetitions still timed: the point's first CT_TIME_ALL */
    /* what a repetition counts and rewrites: one cache line, the fingerprint's buffers and
     * bytes its last three words (the bytes are the entry's too); the fingerprint's other
     * fields and the point (read by a timed repetition, a pattern's change and a flush) on a
     * third line that an untimed repetition does not read. With the fingerprint whole on a
     * third line every repetition read three (OpenFOAM's reductions, callgrind). */
    uint64_t __attribute__((aligned(64))) calls;   /* repetitions not yet in the counters */
    uint64_t pairs;               /* ... and pattern pairs */
    ct_pat_memo pattern;
    ct_fingerprint fp;            /* its buffers rewritten by every repetition */
    ct_point *slot;
} ct_memo;
_Static_assert(offsetof(ct_memo, calls) == 64, "ct_memo's second line");
_Static_assert(offsetof(ct_memo, fp) + offsetof(ct_fingerprint, bytes) + sizeof(int64_t) <= 128,
               "a repetition's fingerprint fields on the entry's second line");
_Static_assert(CT_NUM_COLLECTIVES < 65536 && CT_TIME_ALL < 65536, "ct_memo's 16-bit fields");
/* Direct-mapped, an entry per chain id (ct_profrun_impl.h): two chains alternating in one entry
 * took the full path at every call (256 entries: QE's 1,214 chains shared them). */
#define CT_MEMOS CT_CHAIN_IDS
_Static_assert((CT_MEMOS & (CT_MEMOS - 1)) == 0, "a power of two (a mask)");
_Static_assert(CT_MEMOS == CT_P2P_MEMOS, "one loop flushes both (ct_memo_flush_all)");

/* ~0.9 MB, allocated zeroed by calloc (fresh pages from the kernel, not written): a process
 * touches the pages of the entries its chains use, ~200 bytes a chain. */
typedef struct ct_memo_block {
    ct_p2p_memo p2p[CT_P2P_MEMOS];   /* first: the block's address is theirs (ct_p2p_memos) */
    ct_memo memos[CT_MEMOS];
    struct ct_memo_block *next;
    void *allocated;              /* what calloc returned (the block is aligned in it) */
} ct_memo_block;
CT_HIDDEN atomic_ullong ct_memo_made[CT_MEMO_KINDS];
#define ct_memos (ct_profrun_me.memos)   /* the thread's hot line (ct_p2p_memos: its p2p) */
_Static_assert(offsetof(ct_memo_block, p2p) == 0, "ct_p2p_memos is the block's address");
static _Atomic(ct_memo_block *) ct_memo_blocks;   /* every thread's, for MPI_Finalize */

/* Sites are chain ids, consecutive entries of profchain.c's dense array: `site >> 3` gives every
 * chain an entry of its own (two of OpenFOAM's alternating chains sharing an entry took the full
 * path at every call: with ids that were hash slots, which ones did followed the load addresses,
 * 0.11-0.22 M instructions in 200 steps). The kind is compared, not hashed:
 * a chain is one call instruction, so one kind but for a call through a function pointer. */
static inline ct_memo *ct_memo_at(ct_memo *memos, const void *site, int kind)
{
    (void)kind;
    return &memos[((uintptr_t)site >> 3) & (CT_MEMOS - 1)];
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
    if (call == NULL || kind == CT_PR_BARRIER)   /* 0 bytes, nothing else to compare */
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
        ct_bump(&m->slot->bytes, m->calls * (uint64_t)m->fp.bytes);
        m->calls = 0;
    }
    if (m->pairs > 0) {
        ct_pat_bump(m->pattern.slot, m->pairs, m->pairs * (uint64_t)m->fp.bytes);
        m->pairs = 0;
    }
}

/* This thread's memo block, made at its first memoised call; NULL under MPI_THREAD_MULTIPLE
 * (the repetitions' counters are not atomic) or without memory. */
static ct_memo_block *ct_memo_block_mine(void)
{
    if (ct_profrun_mt)
        return NULL;
    if (ct_memos == NULL) {
        void *raw = calloc(1, sizeof(ct_memo_block) + 64);
        if (raw == NULL)
            return NULL;
        ct_memo_block *b = (ct_memo_block *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
        b->allocated = raw;
        b->next = atomic_load_explicit(&ct_memo_blocks, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&ct_memo_blocks, &b->next, b,
                                                      memory_order_release, memory_order_relaxed)) {
        }
        ct_memos = b;
    }
    return ct_memos;
}

static ct_memo *ct_memo_new(int kind, const ct_call *call, const void *site, MPI_Comm comm,
                            ct_pcomm *st, ct_point *slot)
{
    ct_memo_block *b = ct_memo_block_mine();
    if (b == NULL)
        return NULL;
    ct_memo *m = ct_memo_at(b->memos, site, kind);
    if (m->id != 0)
        ct_memo_flush(m);
    atomic_fetch_add_explicit(&ct_memo_made[CT_MEMO_COLL], 1, memory_order_relaxed);
    m->site = site;
    m->kind = (uint16_t)kind;
    m->comm = comm;
    m->generation = ct_profcomm_cache.generation;
    m->st = st;
    m->root = -1;   /* (MPI_Barrier's: compared with nothing, its fingerprint's) */
    if (call != NULL) {
        m->count = call->recvcount;
        m->type = call->recvtype;
        m->root = call->root;
        m->op = call->op;
    }
    /* (its bytes are its fingerprint's, which ct_profcomm_after writes next: not here, where
     * the fingerprint may still be the previous call's that it compares this one with) */
    m->slot = slot;
    uint64_t seen = atomic_load_explicit(&slot->calls, memory_order_relaxed);
    m->time_all = seen < CT_TIME_ALL ? (uint16_t)(CT_TIME_ALL - seen) : 0;
    return m;
}

/* A point-to-point entry's repetitions into its point (before reuse, and at MPI_Finalize). */
static void ct_p2p_memo_flush(ct_p2p_memo *m)
{
    if (m->calls > 0) {
        ct_bump(&m->slot->calls, m->calls);
        ct_bump(&m->slot->bytes, m->calls * (uint64_t)m->bytes);
        m->calls = 0;
    }
}

static void ct_memo_flush_at(ct_memo *m, ct_p2p_memo *p)
{
    if (m->id != 0)
        ct_memo_flush(m);
    if (p->site != NULL)
        ct_p2p_memo_flush(p);
}

/* The entries the chain ids index (ct_profchain_ids): the pages of the others are never
 * touched, here either (reading a whole block faulted in its ~225 untouched pages). */
static void ct_memo_flush_all(void)
{
    int ids = ct_profchain_ids();
    for (ct_memo_block *b = atomic_load(&ct_memo_blocks); b != NULL; b = b->next) {
        if (ids < 0) {
            for (int i = 0; i < CT_MEMOS; i++)
                ct_memo_flush_at(&b->memos[i], &b->p2p[i]);
            continue;
        }
        for (int n = 0; n < ids; n++) {
            const void *id = ct_profchain_id(n);
            ct_memo_flush_at(ct_memo_at(b->memos, id, 0), ct_p2p_memo_at(b->p2p, id, 0));
        }
    }
}

/* ---- point-to-point calls (the generated wrappers) ----------------------------------------- */

/* The budget's clock at begin's entry on a countdown-timed call, for end (0: none). */
static _Thread_local uint64_t ct_p2p_t_in CT_TLS_MODEL;

/* A timed call's record: the clock read last, after everything begin did. */
static inline ct_p2p_rec ct_p2p_timed(ct_point *s, int timed, uint64_t t_in)
{
    ct_p2p_t_in = timed == 2 ? t_in : 0;
    uint64_t t0 = ct_profrun_ticks();
    return (ct_p2p_rec){s, t0 != 0 ? t0 : 1};
}

/* Made after the call's count went into its point `s` (calls: c so far, this one included):
 * the repetitions timed are those the point's first CT_TIME_ALL calls still hold, as
 * ct_time_this counts them (timed while calls, this one included, < CT_TIME_ALL). Only for a
 * count and a predefined datatype (its handle always means the same size). */
static void ct_p2p_memo_new(ct_p2p_memo *m, int kind, const void *chain, int count,
                            MPI_Datatype type, ct_point *s, int64_t bytes)
{
    const ct_tsize *e = &ct_tsizes[ct_tslot(type)];
    if (count < 0 || e->type != type || e->tag <= 1) {
        m->site = NULL;   /* (flushed) */
        return;
    }
    uint64_t c = atomic_load_explicit(&s->calls, memory_order_relaxed);
    *m = (ct_p2p_memo){chain, type, kind, count, s, 0, bytes,
                       c < CT_TIME_ALL - 1 ? (uint32_t)(CT_TIME_ALL - 1 - c) : 0};
}

/* A call that is not its chain's last call again: sized, its point found, counted (and made
 * the chain's memo where it can be). The entry it would replace is flushed first: it may hold
 * repetitions of this very point (the same chain and call with another count of the same log2
 * bin), which its count must include before it decides the timing. */
static __attribute__((noinline, cold)) ct_p2p_rec ct_p2p_full(ct_p2p_call call, const void *chain,
                                                              int count, MPI_Datatype type,
                                                              uint64_t t_in)
{
    ct_memo_block *b = ct_memo_block_mine();
    ct_p2p_memo *m = b != NULL ? ct_p2p_memo_at(b->p2p, chain, (int)call) : NULL;
    if (m != NULL && m->site != NULL)
        ct_p2p_memo_flush(m);
    int64_t bytes = ct_profrun_bytes(count, type);
    ct_point_key key = {chain, (int)call, 0, ct_bin(bytes), 0};
    ct_point *s = ct_slot(ct_hot_p2p, ct_p2p_slots, CT_P2P_SLOTS, &ct_p2p_lost, &key);
    if (s == NULL)
        return (ct_p2p_rec){NULL, 0};
    ct_count(s, bytes);
    if (m != NULL) {
        ct_p2p_memo_new(m, (int)call, chain, count, type, s, bytes);
        atomic_fetch_add_explicit(&ct_memo_made[CT_MEMO_P2P], m->site != NULL, memory_order_relaxed);
    }
    int timed = ct_time_this(s);
    return timed ? ct_p2p_timed(s, timed, t_in) : (ct_p2p_rec){s, 0};
}

ct_p2p_rec ct_profrun_p2p_begin(ct_p2p_call call, const void *chain, int count, MPI_Datatype type,
                                uint64_t t_in)
{
    ct_seq++;
    ct_p2p_memo *memos = ct_p2p_memos, *m;
    if (CT_UNLIKELY(memos == NULL)
        || (m = ct_p2p_memo_at(memos, chain, (int)call), m->site != chain || m->kind != (int)call
            || m->count != count || m->type != type))
        return ct_p2p_full(call, chain, count, type, t_in);
    m->calls++;   /* into the point at the entry's flush; its size, so its range, is the same */
    int timed = 1;
    if (CT_UNLIKELY(m->time_all > 0)) {
        m->time_all--;
    } else if (CT_LIKELY(ct_time_left > 1)) {
        ct_time_left--;
        return (ct_p2p_rec){m->slot, 0};
    } else {
        ct_time_rearm();
        timed = 2;
    }
    return ct_p2p_timed(m->slot, timed, t_in);
}

void ct_profrun_p2p_end(ct_p2p_rec rec)
{
    uint64_t t1 = ct_profrun_ticks(), ns = t1 - rec.t0;
    ct_time(rec.slot, (int64_t)ns < 0 ? 0 : ns);   /* ticks read on two cores a hair apart */
    uint64_t t_in = ct_p2p_t_in;
    if (t_in != 0) {
        ct_p2p_t_in = 0;
        ct_own_add(rec.t0 - t_in + (ct_profrun_ticks() - t1), CT_TIME_EVERY);
    }
}

/* The communicator's state (profcomm.c's, NULL: none): one compare for a loop's calls on one
 * communicator, profcomm.c's lookup otherwise. */
static inline ct_pcomm *ct_pcomm_of(MPI_Comm comm)
{
    if (CT_LIKELY(comm == ct_profcomm_cache.comm
                  && atomic_load_explicit(&ct_profcomm_generation, memory_order_relaxed)
                         == ct_profcomm_cache.generation))
        return ct_profcomm_cache.state;
    return ct_profcomm_lookup(comm);
}

/* A sample of a light function (ct_profiled_args' ct_light_take) on its way through the full
 * path, recorded at its point after it (ct_light_lead); below MPI_THREAD_MULTIPLE only. */
static CT_HOT_DATA unsigned char ct_light_pending;

/* After a collective's full path: whether the next call here makes a pattern pair with it
 * (ct_profcomm_paired), and the sample noted at its point. A call whose function's light path
 * is open and is not its sample was made to go there (a sampled synchronisation's call, a
 * sample's follower): counted exactly, it is no pattern's first call (its next call is not made
 * to follow it, so pairs after it would be those that happened to meet a sample). */
static inline void ct_light_lead(ct_pcomm *st, int kind, uint64_t seq, ct_point *slot)
{
    int id = CT_LIGHT_COLL + kind;
    if (CT_UNLIKELY(ct_light_pending)) {
        ct_light_pending = 0;
        ct_light_noted(id, slot);
        st->follow = (uint32_t)(seq + 1);
        st->follow_lead = (int16_t)id;
    } else if (CT_UNLIKELY(ct_light_open(id)) && !ct_profrun_by_modes[kind]) {
        st->follow = 0;
    } else {
        st->follow = (uint32_t)(seq + 1);
        st->follow_lead = -1;
    }
    if (!ct_profrun_mt)   /* (the wrappers' light path leaves a follower to the numbered one) */
        ct_coll_line.follow = st->follow != 0;
}

/* A memoised call's repetition becomes the previous call on its communicator. A pair it
 * completes with the call directly before it, by the pattern cached in the entry (asked of
 * profcomm.c only when that call is another than last time), is counted in m->pairs: added to
 * the pattern's counter when the verdict is taken again and at the entry's flush. */
static inline void ct_repeat_pattern(ct_pcomm *st, ct_memo *m, uint64_t seq)
{
    ct_pat_memo *pm = &m->pattern;
    if (ct_profcomm_paired(st, seq)) {
        if (CT_UNLIKELY(pm->after != st->prev_id)) {   /* first time after this call */
            if (m->pairs > 0 && pm->slot != NULL)
                ct_pat_bump(pm->slot, m->pairs, m->pairs * (uint64_t)m->fp.bytes);
            m->pairs = 0;
            ct_profcomm_pattern(st, &m->fp, pm, m->fp.bytes);
        }
        if (pm->pattern >= 0 && ct_profcomm_buffers_fit(st, pm->pattern, st->prev, &m->fp, m->root)) {
            m->pairs++;
            if (CT_UNLIKELY(st->follow_lead >= 0))
                ct_pat_sampled(pm->slot, (uint64_t)m->fp.bytes, st->follow_lead);
        }
    }
    st->prev = &m->fp;
    st->prev_idp = &m->id;
    st->prev_id = m->id;
    st->prev_seq = seq;
    ct_light_lead(st, m->kind, seq, m->slot);
}

/* Every call that is not a memoised one's repetition: sizes, slots and fingerprints derived from
 * the arguments (and the memo made where it can be). */
static __attribute__((noinline, cold)) int ct_profiled_full(int kind, const ct_call *call,
                                                            MPI_Comm comm, const void *site,
                                                            uint64_t seq, ct_pcomm *st,
                                                            int sampled, uint64_t wait,
                                                            uint64_t t_in)
{
    int nprocs = 0;
    if (st != NULL)
        nprocs = st->nprocs;
    else if (comm != MPI_COMM_NULL)
        PMPI_Comm_size(comm, &nprocs);
    int64_t bytes = call == NULL ? 0 : ct_bytes_before(call);
    ct_point *s = bytes >= 0 ? ct_coll_slot(site, kind, nprocs, ct_bin(bytes)) : NULL;
    int timed = sampled || s == NULL || ct_light_pending ? 1 : ct_time_this(s);
    uint64_t t0 = timed ? ct_profrun_ticks() : 0;
    int rc = ct_serve(kind, call, comm);
    uint64_t t1 = timed ? ct_profrun_ticks() : 0, ns = t1 - t0;
    if (CT_UNLIKELY(rc != MPI_SUCCESS || bytes < 0)) {
        /* Sizes only of calls that succeeded: an erroneous call may carry MPI_DATATYPE_NULL,
         * whose size query would raise the error on MPI_COMM_WORLD instead of the caller's. */
        bytes = rc != MPI_SUCCESS ? -1 : colltune_call_bytes(call);
        s = ct_coll_slot(site, kind, nprocs, ct_bin(bytes));
    }
    if (st != NULL && rc == MPI_SUCCESS) {
        ct_memo *m = s != NULL && ct_memoisable(kind, call)
                         ? ct_memo_new(kind, call, site, comm, st, s)
                         : NULL;
        /* the memo entry keeps the fingerprint, else the communicator's state (NULLs) */
        ct_profcomm_after(st, m ? &m->fp : NULL, m ? &m->id : NULL, m ? &m->pattern : NULL, kind,
                          site, call, bytes, seq);
        ct_light_lead(st, kind, seq, s);
    } else {
        ct_light_pending = 0;   /* (failed: no sample) */
    }
    if (s != NULL) {
        /* the point keeps the decision's size bin; a v/w form's recorded size is its counts'
         * (ct_watch_call_bytes: advise shows them), never memoised (ct_memoisable) */
        ct_count(s, call != NULL && rc == MPI_SUCCESS && ct_bytes_forms[call->coll].count_at == CT_BYTES_ZERO
                        ? ct_watch_call_bytes(call)
                        : bytes);
        if (timed)
            ct_timed(s, ns, sampled, wait);
    }
    if (timed == 2 && t_in != 0)
        ct_own_add(t0 - t_in + (ct_profrun_ticks() - t1), CT_TIME_EVERY);
    return rc;
}

/* A memoised call's repetition failed: counted without a size, as any failed call. */
static __attribute__((noinline, cold)) void ct_failed(int kind, const void *site, int nprocs,
                                                      int timed, uint64_t ns, int sampled,
                                                      uint64_t wait)
{
    ct_light_pending = 0;   /* (a sample that failed: in its function's total, not its point's) */
    ct_point *s = ct_coll_slot(site, kind, nprocs, -1);
    if (s != NULL) {
        ct_count(s, -1);
        if (timed)
            ct_timed(s, ns, sampled, wait);
    }
}

/* A memoised call's repetition: is it timed? 1: the point's first CT_TIME_ALL calls (the entry
 * counts them down), 2: the countdown's (its own time measured too), else `sampled`. */
static inline __attribute__((always_inline)) int ct_memo_timed(ct_memo *m, int sampled)
{
    if (CT_UNLIKELY(m->time_all > 0)) {
        m->time_all--;
        return 1;
    }
    if (CT_UNLIKELY(ct_light_pending))
        return 1;   /* a light path's sample stands for many calls: always timed */
    if (CT_UNLIKELY(ct_time_left <= 1)) {
        ct_time_rearm();
        return 2;
    }
    ct_time_left--;
    return sampled;
}

/* After a memoised call's successful repetition (its fingerprint's buffers rewritten): its
 * pattern with the call before it, its time where taken. */
static inline __attribute__((always_inline)) void ct_memo_done(ct_pcomm *st, ct_memo *m,
                                                               uint64_t seq, int timed,
                                                               uint64_t t0, uint64_t t1,
                                                               int sampled, uint64_t wait,
                                                               uint64_t t_in)
{
    m->calls++;   /* into the slot at the entry's flush; its size, so its range, is the same */
    ct_repeat_pattern(st, m, seq);
    if (timed)
        ct_timed(m->slot, t1 - t0, sampled, wait);
    if (timed == 2 && t_in != 0)
        ct_own_add(t0 - t_in + (ct_profrun_ticks() - t1), CT_TIME_EVERY);
}

/* One collective call (call == NULL: MPI_Barrier): counted, sampled, timed where due, recorded.
 * The common case is a loop's call again: its memo has its slot, size and pattern, and what is
 * left is a counter bump, the fingerprint's turn as the previous call, and the clock on one call
 * in CT_TIME_EVERY. */
static inline __attribute__((always_inline)) int ct_profiled(int kind, const ct_call *call,
                                                             MPI_Comm comm, const void *site)
{
    uint64_t seq = ct_call_number();
    ct_pcomm *st = ct_pcomm_of(comm);
    uint64_t wait = 0;
    int sampled = st != NULL && ct_profcomm_due(st) && ct_profcomm_sync(st, comm, &wait);
    /* (after the synchronisation: its time is counted apart, as its latency) */
    uint64_t t_in = sampled ? 0 : ct_own_entry();
    ct_memo_block *b = ct_memos;   /* NULL under MPI_THREAD_MULTIPLE: its atomic counters */
    ct_memo *m;
    if (CT_UNLIKELY(st == NULL || b == NULL
                    || !ct_memo_is(m = ct_memo_at(b->memos, site, kind), site, kind, call, comm)))
        return ct_profiled_full(kind, call, comm, site, seq, st, sampled, wait, t_in);
    int timed = ct_memo_timed(m, sampled);
    uint64_t t0 = timed ? ct_profrun_ticks() : 0;
    int rc = ct_serve(kind, call, comm);
    uint64_t t1 = timed ? ct_profrun_ticks() : 0;
    if (CT_UNLIKELY(rc != MPI_SUCCESS)) {
        ct_failed(kind, site, st->nprocs, timed, t1 - t0, sampled, wait);
        return rc;
    }
    if (call != NULL)
        ct_fingerprint_buffers(&m->fp, st, kind, call);
    ct_memo_done(st, m, seq, timed, t0, t1, sampled, wait, t_in);
    return rc;
}

/* The chain the call path by arguments found for a call it handed back (not a repetition): the
 * serving function's ct_profrun_dispatch, which it calls next, takes it instead of looking the
 * chain up again (whose anchor would be another frame's). NULL: none. */
static _Thread_local const void *ct_chain_handed CT_TLS_MODEL;

int ct_profrun_dispatch(const struct ct_call *call)
{
    const void *site = ct_chain_handed;
    if (site != NULL)
        ct_chain_handed = NULL;
    else   /* the call struct is in the wrapper's frame: the anchor of the chain */
        site = ct_profchain_fast(ct_profrun_caller != NULL ? ct_profrun_caller : ct_profrun_site,
                                 call);
    return ct_profiled(call->coll, call, call->comm, site);
}

/* ---- the call path by arguments (gen_wrappers.py's BY_ARGS rows) --------------------------- */

/* Is this call the entry's (ct_memo_is, by arguments)? A row without a root or an op (Allreduce,
 * Bcast) made its entries with the ct_call's unset value there, so it compares nothing there.
 * The generation is the process's (no state freed since the entry was made, so its m->st is
 * the communicator's: ct_pcomm_of's lookup is not needed). */
static inline __attribute__((always_inline)) int ct_memo_args_is(const ct_memo *m, const void *site,
                                                                 int kind, MPI_Comm comm, int count,
                                                                 MPI_Datatype type, MPI_Op op,
                                                                 int root)
{
    return m->site == site && m->kind == kind && m->comm == comm
           && m->generation
                  == atomic_load_explicit(&ct_profcomm_generation, memory_order_relaxed)
           && m->count == count
           && m->type == type && (kind == CT_COLL_BCAST || m->op == op)
           && (kind == CT_COLL_ALLREDUCE || m->root == root);
}

static inline __attribute__((always_inline)) int ct_serve_args(int kind, const void *sendbuf,
                                                               void *recvbuf, int count,
                                                               MPI_Datatype type, MPI_Op op,
                                                               int root, MPI_Comm comm)
{
    ct_inside(1);
    int rc = kind == CT_COLL_ALLREDUCE ? PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm)
             : kind == CT_COLL_REDUCE  ? PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm)
                                       : PMPI_Bcast(recvbuf, count, type, root, comm);
    ct_inside(0);
    return rc;
}

/* A memoised call's repetition that is sampled, timed or measures the call path's own time
 * (about one call in eight on OpenFOAM): ct_profiled's repetition path, the call's arguments in
 * registers; what it records and in what order is the same (the library serves it, as
 * colltune_invoke_library would). Its entry `m` matched the call (ct_memo_args_is). */
static inline __attribute__((always_inline)) int
ct_profiled_memo(int kind, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                 MPI_Op op, int root, MPI_Comm comm, const void *site, ct_memo *m)
{
    ct_pcomm *st = m->st;
    uint64_t seq = ct_call_number();
    uint64_t wait = 0;
    int sampled = ct_profcomm_due(st) && ct_profcomm_sync(st, comm, &wait);
    uint64_t t_in = sampled ? 0 : ct_own_entry();
    int timed = ct_memo_timed(m, sampled);
    uint64_t t0 = timed ? ct_profrun_ticks() : 0;
    int rc = ct_serve_args(kind, sendbuf, recvbuf, count, type, op, root, comm);
    uint64_t t1 = timed ? ct_profrun_ticks() : 0;
    if (CT_UNLIKELY(rc != MPI_SUCCESS)) {
        ct_failed(kind, site, st->nprocs, timed, t1 - t0, sampled, wait);
        return rc;
    }
    ct_fingerprint_args(&m->fp, st, kind, sendbuf, recvbuf, root);
    ct_memo_done(st, m, seq, timed, t0, t1, sampled, wait, t_in);
    return rc;
}

/* The path by arguments: 1, served (*rc its return code); 0, not a repetition, or another mode
 * serves the collective (its ct_full_<coll> then, given the chain: ct_chain_handed); 2, a
 * repetition to sample or time (ct_<coll>_timed, given the chain the same way). Nothing is
 * changed before the call is known to be a repetition, nor before it is known to be an untimed
 * one: the common call (~7 in 8 on OpenFOAM) runs as one straight piece of code (its lines are
 * instruction-cache misses after the application's own work between two calls: ~6.5 a call
 * when this path had the timed and sampled branches inline, callgrind's simulation), and does
 * what ct_profiled_memo does for it: counted, the countdown brought down, served, its
 * fingerprint and pattern. */
enum { CT_ARGS_FULL, CT_ARGS_SERVED, CT_ARGS_TIMED };
static inline __attribute__((always_inline)) int
ct_profiled_args(int kind, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                 MPI_Op op, int root, MPI_Comm comm, int *rc)
{
    ct_coll_line_flush();
    if (CT_UNLIKELY(ct_profrun_by_modes[kind]))
        return CT_ARGS_FULL;
    /* The light path (ct_light_call's, with the communicator's count and the calls that must
     * take the full path: the sampled synchronisation's, a sample's follower). */
    const int id = CT_LIGHT_COLL + kind;
    int32_t left = CT_LEFT(id);
    if (CT_LIKELY(left > 1)) {
        ct_pcomm *st = ct_pcomm_of(comm);
        if (CT_LIKELY(st != NULL && st->calls != st->next_sample
                      && st->follow != (uint32_t)ct_call_number_next())) {
            CT_LEFT(id) = left - 1;
            ct_coll_light_calls++;
            st->calls++;
            /* the next call on this communicator takes the wrapper's light path (ct_hot.h):
             * not a follower, it leaves none due (a number later than every follow's) */
            ct_coll_line_arm(comm, st);
            ct_coll_line.follow = 0;
            /* (a failed call: in its function's total, at no point) */
            *rc = ct_serve_args(kind, sendbuf, recvbuf, count, type, op, root, comm);
            return CT_ARGS_SERVED;
        }
    } else if (CT_UNLIKELY(left == 1)) {
        ct_light_pending = (unsigned char)ct_light_take(id);
    }
    /* its CFA: the same for the same stack depth at the call (no frame pointer needed) */
    const void *site = ct_profchain_shared(ct_profrun_caller != NULL ? ct_profrun_caller
                                                                     : ct_profrun_site,
                                           __builtin_dwarf_cfa());
    ct_memo_block *b = ct_memos;   /* NULL under MPI_THREAD_MULTIPLE: its atomic counters */
    ct_memo *m;
    if (CT_UNLIKELY(b == NULL
                    || !ct_memo_args_is(m = ct_memo_at(b->memos, site, kind), site, kind, comm,
                                        count, type, op, root))) {
        ct_chain_handed = site;
        return CT_ARGS_FULL;
    }
    ct_pcomm *st = m->st;
    /* (ct_profcomm_due, ct_own_entry and ct_memo_timed would all say "no") */
    if (CT_UNLIKELY(st->calls == st->next_sample || m->time_all > 0 || ct_time_left <= 1
                    || ct_light_pending)) {
        ct_chain_handed = site;
        return CT_ARGS_TIMED;
    }
    uint64_t seq = ct_call_number();
    st->calls++;
    ct_time_left--;
    *rc = ct_serve_args(kind, sendbuf, recvbuf, count, type, op, root, comm);
    if (CT_UNLIKELY(*rc != MPI_SUCCESS)) {
        ct_failed(kind, site, st->nprocs, 0, 0, 0, 0);
        return CT_ARGS_SERVED;
    }
    ct_fingerprint_args(&m->fp, st, kind, sendbuf, recvbuf, root);
    m->calls++;   /* into the slot at the entry's flush; its size, so its range, is the same */
    ct_repeat_pattern(st, m, seq);
    return CT_ARGS_SERVED;
}

/* A repetition ct_profiled_args handed over (CT_ARGS_TIMED): the chain it found, its entry. Out
 * of the hot text; the same arguments as MPI_<Coll>, so that the hot path's jump here is a
 * tail call. */
static inline __attribute__((always_inline)) int
ct_profiled_timed(int kind, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                  MPI_Op op, int root, MPI_Comm comm)
{
    const void *site = ct_chain_handed;
    ct_chain_handed = NULL;
    return ct_profiled_memo(kind, sendbuf, recvbuf, count, type, op, root, comm, site,
                            ct_memo_at(ct_memos->memos, site, kind));
}

static __attribute__((noinline, cold)) int ct_allreduce_timed(const void *sendbuf, void *recvbuf,
                                                              int count, MPI_Datatype datatype,
                                                              MPI_Op op, MPI_Comm comm)
{
    return ct_profiled_timed(CT_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, -1, comm);
}

static __attribute__((noinline, cold)) int ct_reduce_timed(const void *sendbuf, void *recvbuf,
                                                           int count, MPI_Datatype datatype,
                                                           MPI_Op op, int root, MPI_Comm comm)
{
    return ct_profiled_timed(CT_COLL_REDUCE, sendbuf, recvbuf, count, datatype, op, root, comm);
}

static __attribute__((noinline, cold)) int ct_bcast_timed(void *buffer, int count,
                                                          MPI_Datatype datatype, int root,
                                                          MPI_Comm comm)
{
    return ct_profiled_timed(CT_COLL_BCAST, NULL, buffer, count, datatype, MPI_OP_NULL, root,
                             comm);
}

CT_HOT_TEXT int ct_profrun_allreduce(const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int rc;
    switch (ct_profiled_args(CT_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, -1, comm,
                             &rc)) {
    case CT_ARGS_SERVED:
        return rc;
    case CT_ARGS_TIMED:
        return ct_allreduce_timed(sendbuf, recvbuf, count, datatype, op, comm);
    default:
        return ct_full_allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
}

CT_HOT_TEXT int ct_profrun_reduce(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    int rc;
    switch (ct_profiled_args(CT_COLL_REDUCE, sendbuf, recvbuf, count, datatype, op, root, comm,
                             &rc)) {
    case CT_ARGS_SERVED:
        return rc;
    case CT_ARGS_TIMED:
        return ct_reduce_timed(sendbuf, recvbuf, count, datatype, op, root, comm);
    default:
        return ct_full_reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
}

CT_HOT_TEXT int ct_profrun_bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                                 MPI_Comm comm)
{
    int rc;
    switch (ct_profiled_args(CT_COLL_BCAST, NULL, buffer, count, datatype, MPI_OP_NULL, root,
                             comm, &rc)) {
    case CT_ARGS_SERVED:
        return rc;
    case CT_ARGS_TIMED:
        return ct_bcast_timed(buffer, count, datatype, root, comm);
    default:
        return ct_full_bcast(buffer, count, datatype, root, comm);
    }
}

/* ---- MPI_Finalize (profrun.c calls it with ct_profrun_on cleared) ------------------------- */

void ct_profcall_finish(void)
{
    ct_memo_flush_all();
    /* Then freed: no call reaches a memo any more (the wrappers and MPI_Barrier test
     * ct_profrun_on first, and MPI cannot be initialised again), so the other threads' pointers
     * to their blocks are never followed; this thread's is cleared all the same. Below
     * MPI_THREAD_MULTIPLE no other thread is in an MPI call during MPI_Finalize. */
    ct_memo_block *b = atomic_exchange(&ct_memo_blocks, NULL);
    while (b != NULL) {
        ct_memo_block *next = b->next;
        free(b->allocated);
        b = next;
    }
    ct_memos = NULL;
}

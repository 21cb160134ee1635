/*
 * Tracing of the learning mode (docs/select.md "Trace files"): a buffer allocated at MPI_Init,
 * filled with one atomic increment per traced call, written to DIR/rank-N.cttrace at
 * MPI_Finalize. Nothing is allocated on the call path.
 *
 * Bounded in records (COLLTUNE_TRACE_RECORDS) and in time (COLLTUNE_TRACE_SECONDS after
 * MPI_Init): at the first call past either bound the trace closes, the rank's calls take the
 * untraced path from then on (no clock reads, no shared counter), and the header says which
 * bound closed it and when. The calls not recorded are counted without touching the call path:
 * each communicator counts its learning-mode calls anyway (`calls`, the draw's index) and its
 * records (`recorded`, on the traced path only), so the difference, summed when the trace is
 * written, is what the header's n_overflow reports. A call-heavy application used to pay two
 * clock reads and a contended atomic on every call after a full buffer, for records it dropped
 * (issue 26: ExaML fills 65536 records in its first 0.3 s of 5).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ct_tls.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_learn.h"
#include "ct_member.h"
#include "ct_select.h"
#include "ct_settings.h"

/* The trace's outcome codes are the draw's (docs/select.md "Trace files"). */
_Static_assert(CT_PICK_FIXED == CT_TRACE_OUTCOME_FIXED && CT_PICK_EXPLORE == CT_TRACE_OUTCOME_EXPLORE
                   && CT_PICK_EXPLOIT == CT_TRACE_OUTCOME_EXPLOIT
                   && CT_PICK_NOT_APPLICABLE == CT_TRACE_OUTCOME_NOT_APPLICABLE,
               "outcome codes of native/spec/formats.toml");

_Static_assert(CT_TRACE_TICKS_PER_SECOND == 1 << 20, "start ticks: the arithmetic below");
#define CT_TICKS_MAX_NS UINT64_C(1048576000000000)   /* 2^40 ticks of 2^-20 s = 2^20 s, in ns */


atomic_int ct_recording;
_Thread_local ct_trace_record ct_pending CT_TLS_MODEL;
_Thread_local ct_comm_state *ct_pending_state CT_TLS_MODEL;

static int ct_world_rank, ct_world_size;
static uint64_t ct_t0;
ct_trace_record *ct_trace;
static uint64_t ct_trace_cap;
static uint64_t ct_limit_ns;        /* COLLTUNE_TRACE_SECONDS in ns; UINT64_MAX: no time bound */
static double ct_limit_s;
static atomic_ullong ct_trace_next;
static atomic_int ct_stop;
static atomic_ullong ct_stop_ns;    /* when the trace closed, ns after MPI_Init */
/* The trace's communicator table: the facts of every communicator once, in order of first
 * collective, and the state of each while it lives (to sum its calls not recorded); grown
 * under a spin lock when a communicator is set up or freed, never on the call path. */
typedef struct ct_trace_comm {
    uint32_t id, size, nodes, ppn;
} ct_trace_comm;
static ct_trace_comm *ct_tcomms;
static ct_comm_state **ct_tstates;
static uint32_t ct_ntcomms, ct_captcomms;
static atomic_flag ct_tcomms_lock = ATOMIC_FLAG_INIT;
static atomic_ullong ct_trace_unslotted;   /* calls on communicators the table had no room for */
static atomic_ullong ct_trace_gone;        /* calls not recorded on communicators already freed */
static char *ct_trace_dir;

/* ---- settings at MPI_Init ------------------------------------------------------------------ */

static const char *ct_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* COLLTUNE_TRACE_SECONDS: a decimal >= 0 (0: no time bound). */
static int ct_parse_seconds(const char *text, double *seconds)
{
    if (text == NULL || ((text[0] < '0' || text[0] > '9') && text[0] != '.'))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0) || v > 1e9)
        return -1;
    *seconds = v;
    return 0;
}

/* The bounds of this rank's trace; 0 if it records nothing (then it says why, once). */
static int ct_trace_bounds(uint64_t *cap)
{
    const char *records = getenv(CT_ENV_TRACE_RECORDS);
    if (ct_parse_u64(records != NULL && records[0] ? records : CT_DEFAULT_TRACE_RECORDS, cap) != 0
        || *cap == 0 || *cap > (UINT64_C(1) << 32)) {
        if (ct_world_rank == 0)
            ct_message("warning: COLLTUNE_TRACE_RECORDS=%s is not a number in 1..2^32; no rank "
                       "records", records);
        return 0;
    }
    const char *seconds = getenv(CT_ENV_TRACE_SECONDS);
    if (ct_parse_seconds(seconds != NULL && seconds[0] ? seconds : CT_DEFAULT_TRACE_SECONDS,
                         &ct_limit_s) != 0) {
        if (ct_world_rank == 0)
            ct_message("warning: COLLTUNE_TRACE_SECONDS=%s is not a number of seconds >= 0; no "
                       "rank records", seconds);
        return 0;
    }
    ct_limit_ns = ct_limit_s > 0 ? (uint64_t)(ct_limit_s * 1e9) : UINT64_MAX;
    return 1;
}

void ct_trace_setup(int rank, int size, uint64_t t0)
{
    ct_world_rank = rank;
    ct_world_size = size;
    ct_t0 = t0;
    atomic_store(&ct_stop, CT_TRACE_STOP_OPEN);
    const char *dir = ct_env(CT_ENV_TRACE_DIR);
    if (dir == NULL)
        return;
    const char *ranks = ct_env(CT_ENV_TRACE_RANKS);
    uint64_t k = (uint64_t)size, cap = 0;
    if (ranks != NULL && strcmp(ranks, "all") != 0 && ct_parse_u64(ranks, &k) != 0) {
        if (rank == 0)
            ct_message("warning: COLLTUNE_TRACE_RANKS=%s is not `all` or a number; no rank "
                       "records (decisions are unaffected)", ranks);
        return;
    }
    uint64_t stride = k == 0 ? 0 : ((uint64_t)size + k - 1) / k;
    if (stride == 0 || (uint64_t)rank % stride != 0 || !ct_trace_bounds(&cap))
        return;
    if (access(dir, W_OK | X_OK) != 0) {
        ct_message("warning: rank %d: COLLTUNE_TRACE_DIR=%s is not a writable directory (%s); "
                   "this rank records nothing (create it or point to another)", rank, dir,
                   strerror(errno));
        return;
    }
    ct_trace = malloc((size_t)cap * sizeof *ct_trace);
    ct_trace_dir = strdup(dir);
    if (ct_trace == NULL || ct_trace_dir == NULL) {
        ct_message("warning: rank %d: no memory for %llu trace records; this rank records "
                   "nothing (lower COLLTUNE_TRACE_RECORDS)", rank, (unsigned long long)cap);
        ct_trace_free();
        return;
    }
    ct_trace_cap = cap;
    atomic_store(&ct_recording, 1);
}

/* ---- communicators ------------------------------------------------------------------------- */

static void ct_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&ct_tcomms_lock, memory_order_acquire))
        ;
}

static void ct_unlock(void)
{
    atomic_flag_clear_explicit(&ct_tcomms_lock, memory_order_release);
}

static int ct_grow(void)
{
    uint32_t cap = ct_captcomms ? ct_captcomms * 2u : 16u;
    cap = cap > CT_NO_SLOT ? CT_NO_SLOT : cap;
    ct_trace_comm *grown = realloc(ct_tcomms, cap * sizeof *grown);
    if (grown == NULL)
        return -1;
    ct_tcomms = grown;
    ct_comm_state **states = realloc(ct_tstates, cap * sizeof *states);
    if (states == NULL)
        return -1;
    ct_tstates = states;
    ct_captcomms = cap;
    return 0;
}

uint16_t ct_trace_slot(ct_comm_state *s, uint32_t size, uint32_t nodes, uint32_t ppn)
{
    uint16_t slot = CT_NO_SLOT;
    ct_lock();
    if (ct_ntcomms == ct_captcomms && ct_captcomms < CT_NO_SLOT)
        ct_grow();
    if (ct_ntcomms < ct_captcomms) {
        ct_tcomms[ct_ntcomms] = (ct_trace_comm){s->id, size, nodes, ppn};
        ct_tstates[ct_ntcomms] = s;
        slot = (uint16_t)ct_ntcomms++;
    }
    ct_unlock();
    return slot;
}

static uint64_t ct_not_recorded(const ct_comm_state *s)
{
    return atomic_load_explicit(&s->calls, memory_order_relaxed)
           - atomic_load_explicit(&s->recorded, memory_order_relaxed);
}

void ct_trace_comm_gone(ct_comm_state *s)
{
    if (s->slot == CT_NO_SLOT)
        return;
    ct_lock();
    if (ct_tstates != NULL && s->slot < ct_ntcomms && ct_tstates[s->slot] == s) {
        ct_tstates[s->slot] = NULL;
        atomic_fetch_add(&ct_trace_gone, ct_not_recorded(s));
    }
    ct_unlock();
}

/* ---- the call path ------------------------------------------------------------------------- */

int ct_learn_tracing(void)
{
    return atomic_load_explicit(&ct_recording, memory_order_relaxed);
}

/* The first call past a bound closes the trace; later calls take the untraced path. */
static __attribute__((noinline)) void ct_trace_close(int why, uint64_t at)
{
    int open = CT_TRACE_STOP_OPEN;
    if (atomic_compare_exchange_strong(&ct_stop, &open, why)) {
        atomic_store(&ct_stop_ns, at - ct_t0);
        if (!ct_checking)
            atomic_store_explicit(&ct_recording, 0, memory_order_relaxed);
    }
}

/* The record of the call ct_pending describes, decided as `d`, run from `start` to `end`: its
 * index + 1 in the buffer, or 0 where the trace is closed or the call is not recorded. */
static uint64_t ct_trace_put(const ct_decision *d, uint64_t start, uint64_t end)
{
    if (ct_trace == NULL || atomic_load_explicit(&ct_stop, memory_order_relaxed) != CT_TRACE_STOP_OPEN)
        return 0;
    uint64_t ns = start - ct_t0;
    if (CT_UNLIKELY(ns >= ct_limit_ns)) {
        ct_trace_close(CT_TRACE_STOP_SECONDS, start);
        return 0;
    }
    if (CT_UNLIKELY(ct_pending.comm == CT_NO_SLOT)) {
        atomic_fetch_add_explicit(&ct_trace_unslotted, 1, memory_order_relaxed);
        return 0;
    }
    uint64_t slot = atomic_fetch_add_explicit(&ct_trace_next, 1, memory_order_relaxed);
    if (CT_UNLIKELY(slot >= ct_trace_cap)) {
        ct_trace_close(CT_TRACE_STOP_RECORDS, start);
        return 0;
    }
    ct_trace_record *r = &ct_trace[slot];
    *r = ct_pending;
    if (d->reason != COLLTUNE_APPLICABLE)
        r->status = (uint8_t)(CT_PICK_NOT_APPLICABLE | (unsigned)d->reason << 2 | (r->status & 0x80u));
    /* ticks of 2^-20 s = ns * 2^20 / 10^9 = ns * 2^11 / 5^9, exact in integers below 2^40 */
    uint64_t t = ns < CT_TICKS_MAX_NS ? (ns << 11) / 1953125u : (UINT64_C(1) << 40) - 1;
    r->start_lo = (uint32_t)t;
    r->start_hi = (uint8_t)(t >> 32);
    r->duration = (float)((double)(int64_t)(end - start) * 1e-9);
    ct_comm_state *s = ct_pending_state;
    atomic_store_explicit(&s->recorded, atomic_load_explicit(&s->recorded, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return slot + 1;
}

int ct_learn_run_traced(const ct_call *call, ct_decision *d)
{
    uint64_t start = ct_now();
    int rc = d->variant < 0 ? colltune_invoke_library(call)
             : ct_checking && d->mode == CT_MODE_EXPLORE ? ct_check_run(call, d)
                                                         : ct_run_member(call, d);
    ct_trace_put(d, start, ct_now());
    return rc;
}

/* A started call's record, in call order like every record; its duration stays NaN (no reward)
 * until ct_trace_completed gives it one. */
uint64_t ct_trace_started(const ct_decision *d, uint64_t start, uint64_t end)
{
    uint64_t record = ct_trace_put(d, start, end);
    if (record != 0)
        ct_trace[record - 1].duration = NAN;
    return record;
}

void ct_trace_completed(uint64_t record, uint64_t ns, int alone)
{
    if (ct_trace != NULL && record != 0 && record <= ct_trace_cap && alone)
        ct_trace[record - 1].duration = (float)((double)ns * 1e-9);
}

/* Records without a reward: started calls completed together with other requests, or never
 * completed here (freed active, or pending at MPI_Finalize). */
static uint64_t ct_unrewarded(uint64_t kept)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < kept; i++)
        n += isnan(ct_trace[i].duration);
    return n;
}

/* ---- MPI_Finalize -------------------------------------------------------------------------- */

static void ct_put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t ct_double_bits(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

/* Calls not recorded: past a bound, on communicators beyond the table, on freed ones. */
static uint64_t ct_overflow(void)
{
    uint64_t lost = atomic_load(&ct_trace_unslotted) + atomic_load(&ct_trace_gone);
    ct_lock();
    for (uint32_t i = 0; i < ct_ntcomms; i++)
        if (ct_tstates[i] != NULL)
            lost += ct_not_recorded(ct_tstates[i]);
    ct_unlock();
    return lost;
}

static int ct_write_trace(FILE *f, uint64_t seed, uint64_t table_hash, uint64_t overflow)
{
    uint64_t n = atomic_load(&ct_trace_next);
    uint64_t kept = n < ct_trace_cap ? n : ct_trace_cap;
    double wall = (double)(ct_now() - ct_t0) * 1e-9;
    int stop = atomic_load(&ct_stop);
    double stopped = stop == CT_TRACE_STOP_OPEN ? wall : (double)atomic_load(&ct_stop_ns) * 1e-9;
    unsigned char h[CT_TRACE_HEADER_BYTES] = {0};
    memcpy(h + CT_TRACE_H_MAGIC, CT_TRACE_MAGIC, 8);
    ct_put(h + CT_TRACE_H_VERSION, CT_TRACE_VERSION, 4);
    ct_put(h + CT_TRACE_H_RECORD_BYTES, sizeof(ct_trace_record), 4);
    ct_put(h + CT_TRACE_H_RANK, (uint64_t)ct_world_rank, 4);
    ct_put(h + CT_TRACE_H_WORLD_SIZE, (uint64_t)ct_world_size, 4);
    ct_put(h + CT_TRACE_H_SEED, seed, 8);
    ct_put(h + CT_TRACE_H_TABLE_HASH, table_hash, 8);
    ct_put(h + CT_TRACE_H_N_RECORDS, kept, 8);
    ct_put(h + CT_TRACE_H_OVERFLOW, overflow, 8);
    ct_put(h + CT_TRACE_H_WALL_S, ct_double_bits(wall), 8);
    ct_put(h + CT_TRACE_H_N_COMMS, ct_ntcomms, 4);
    ct_put(h + CT_TRACE_H_COMM_BYTES, CT_TRACE_COMM_BYTES, 4);
    ct_put(h + CT_TRACE_H_STOP, (uint64_t)stop, 4);
    ct_put(h + CT_TRACE_H_UNREWARDED, ct_unrewarded(kept), 4);
    ct_put(h + CT_TRACE_H_RECORD_LIMIT, ct_trace_cap, 8);
    ct_put(h + CT_TRACE_H_SECONDS_LIMIT,
           ct_double_bits(ct_limit_ns == UINT64_MAX ? 0.0 : ct_limit_s), 8);
    ct_put(h + CT_TRACE_H_STOP_S, ct_double_bits(stopped), 8);
    int bad = fwrite(h, sizeof h, 1, f) != 1;
    static const unsigned form_of_row[CT_SELECT_FORMS] = {CT_ROW_BLOCKING, CT_ROW_NONBLOCKING,
                                                          CT_ROW_PERSISTENT};
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++) {
        int coll = c % CT_NUM_COLLECTIVES;
        if (c != coll && !(ct_collectives[coll].forms & form_of_row[c / CT_NUM_COLLECTIVES]))
            continue;
        fprintf(f, "%s%s default", colltune_collective_name(coll), CT_SELECT_FORM_SUFFIX(c));
        for (int m = 1; m < ct_select_portfolio_size(c); m++)
            fprintf(f, " %s", ct_select_member_name(c, m));
        fputc('\n', f);
    }
    fputc('\n', f);
    for (uint32_t i = 0; i < ct_ntcomms; i++) {
        unsigned char c[CT_TRACE_COMM_BYTES];
        ct_put(c + CT_TRACE_C_COMM_ID, ct_tcomms[i].id, 4);
        ct_put(c + CT_TRACE_C_SIZE, ct_tcomms[i].size, 4);
        ct_put(c + CT_TRACE_C_NODES, ct_tcomms[i].nodes, 4);
        ct_put(c + CT_TRACE_C_PPN, ct_tcomms[i].ppn, 4);
        bad |= fwrite(c, sizeof c, 1, f) != 1;
    }
    /* Records are stored in the host's order: little-endian on every platform we build for. */
    if (kept > 0)
        bad |= fwrite(ct_trace, sizeof *ct_trace, kept, f) != kept;
    return bad | ferror(f);
}

void ct_trace_finish(uint64_t seed, uint64_t table_hash)
{
    if (ct_trace == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.cttrace", ct_trace_dir, ct_world_rank);
    uint64_t overflow = ct_overflow(), unslotted = atomic_load(&ct_trace_unslotted);
    FILE *f = fopen(path, "wb");
    int bad = f == NULL || ct_write_trace(f, seed, table_hash, overflow) != 0;
    if (f != NULL)
        bad |= fclose(f) != 0;
    if (bad)
        ct_message("warning: rank %d: could not write %s (%s); its records are lost",
                   ct_world_rank, path, strerror(errno));
    if (unslotted > 0)
        ct_message("warning: rank %d: more than %u communicators in the trace, %llu calls on "
                   "the later ones not recorded", ct_world_rank, CT_NO_SLOT,
                   (unsigned long long)unslotted);
    int stop = atomic_load(&ct_stop);
    if (stop == CT_TRACE_STOP_RECORDS)
        ct_message("warning: rank %d: trace buffer full, %llu calls not recorded (raise "
                   "COLLTUNE_TRACE_RECORDS, now %llu)", ct_world_rank,
                   (unsigned long long)(overflow - unslotted), (unsigned long long)ct_trace_cap);
    else if (stop == CT_TRACE_STOP_SECONDS)
        ct_message("warning: rank %d: tracing stopped after %g s, %llu calls not recorded "
                   "(raise COLLTUNE_TRACE_SECONDS, or 0 for no time bound)", ct_world_rank,
                   ct_limit_s, (unsigned long long)(overflow - unslotted));
}

void ct_trace_free(void)
{
    free(ct_trace);
    free(ct_trace_dir);
    ct_lock();
    free(ct_tcomms);
    free(ct_tstates);
    ct_tcomms = NULL;
    ct_tstates = NULL;
    ct_ntcomms = ct_captcomms = 0;
    ct_unlock();
    ct_trace = NULL;
    ct_trace_dir = NULL;
    ct_trace_cap = 0;
    atomic_store(&ct_recording, 0);
    atomic_store(&ct_trace_next, 0);
    atomic_store(&ct_trace_unslotted, 0);
    atomic_store(&ct_trace_gone, 0);
}

/*
 * Profiling mode (COLLTUNE_PROFILE_RUN): see ct_profrun.h for what is recorded.
 *
 * Call path: fixed open-addressing tables of relaxed atomic counters (MPI_THREAD_MULTIPLE safe,
 * no allocation, no lock). A slot is claimed once by CAS on its state; when a table is full the
 * call is only counted in `lost` (written out, so the front end can say what it misses).
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
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

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
#define CT_MAPS_BYTES 65536

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
static char ct_maps[CT_MAPS_BYTES];               /* executable mappings at MPI_Init */
static int ct_rank_, ct_nprocs_;
static int ct_keyval_ok;                          /* profcomm.c's keyval was created */
static int ct_mt;                                 /* MPI_THREAD_MULTIPLE: atomic updates */
static unsigned long ct_every;                    /* sample every N-th call at least, 0: never */
static uint64_t ct_budget_ppm;                    /* agreed sampling budget, 0: none */
/* ct_active as the other modes set it: collectives no mode serves go straight to the library,
 * without ct_dispatch's decision path (its queries are the larger part of a profiled call). */
static unsigned char ct_served[CT_NUM_COLLECTIVES];
static int ct_profrun_wanted;                    /* COLLTUNE_PROFILE_RUN set on this rank */
/* The clock of the call path (ct_profrun_ticks): the TSC where the kernel itself trusts it for
 * CLOCK_MONOTONIC (clocksource "tsc": invariant and synchronised across cores), ~7 ns a read
 * against ~22 ns for clock_gettime here; on ExaML's 1.36 M calls per rank, 2 reads per call on
 * both ranks of every Reduce/Bcast round trip, that difference is ~1% of the run. Durations are
 * kept in ticks and converted at MPI_Finalize with the rate measured over the whole run. */
static int ct_tsc;
static uint64_t ct_tick_init, ct_ns_init;
static double ct_ns_per_tick = 1.0;

uint64_t ct_profrun_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ct_profrun_ticks(void)
{
#if defined(__x86_64__)
    if (ct_tsc)
        return __rdtsc();
#endif
    return ct_profrun_ns();
}

double ct_profrun_ns_per_tick(void)
{
    if (!ct_tsc)
        return 1.0;
    uint64_t ticks = ct_profrun_ticks() - ct_tick_init, ns = ct_profrun_ns() - ct_ns_init;
    return ticks > 0 ? (double)ns / (double)ticks : 1.0;
}

static int ct_tsc_trusted(void)
{
#if defined(__x86_64__)
    char name[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f == NULL)
        return 0;
    int ok = fgets(name, sizeof name, f) != NULL && strcmp(name, "tsc\n") == 0;
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

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

/* One collective call (call == NULL: MPI_Barrier), counted, sampled, timed where due, recorded.
 * Its point's slot is found before the call where its size is known then (the common case): the
 * slot says whether the point still has all its calls timed. */
static inline __attribute__((always_inline)) int ct_profiled(int kind, const ct_call *call,
                                                             MPI_Comm comm, const void *site)
{
    uint64_t seq = ++ct_profrun_seq;
    ct_pcomm *st = ct_profcomm_state(comm);
    int nprocs = 0;
    if (st != NULL)
        nprocs = st->nprocs;
    else if (comm != MPI_COMM_NULL)
        PMPI_Comm_size(comm, &nprocs);
    uint64_t wait = 0;
    int sampled = st != NULL && ct_profcomm_due(st) && ct_profcomm_sync(st, comm, &wait);
    int64_t bytes = call == NULL ? 0 : ct_bytes_before(call);
    ct_slot *s = bytes >= 0 ? ct_coll_slot(site, kind, nprocs, ct_bin(bytes)) : NULL;
    int timed = sampled || s == NULL || ct_time_this(s);
    ct_profrun_inside = 1;
    uint64_t t0 = timed ? ct_profrun_ticks() : 0;
    int rc = call == NULL       ? PMPI_Barrier(comm)
             : ct_served[kind] ? ct_dispatch(call)
                               : colltune_invoke_library(call);
    uint64_t ns = timed ? ct_profrun_ticks() - t0 : 0;   /* ticks until MPI_Finalize */
    if ((int64_t)ns < 0)
        ns = 0;
    ct_profrun_inside = 0;

    if (CT_UNLIKELY(rc != MPI_SUCCESS || bytes < 0)) {
        /* Sizes only of calls that succeeded: an erroneous call may carry MPI_DATATYPE_NULL,
         * whose size query would raise the error on MPI_COMM_WORLD instead of the caller's. */
        bytes = rc != MPI_SUCCESS ? -1 : colltune_call_bytes(call);
        s = ct_coll_slot(site, kind, nprocs, ct_bin(bytes));
    }
    if (st != NULL && rc == MPI_SUCCESS)
        ct_profcomm_after(st, kind, site, call, bytes, seq);
    if (s == NULL)
        return rc;
    ct_count(s, bytes);
    if (timed) {
        /* The application's time in the call includes the inserted synchronisation: on a
         * sampled call the wait for late ranks moved there from the collective. */
        ct_time(s, wait + ns);
        if (sampled) {
            ct_bump(&s->samples, 1);
            ct_bump(&s->sample_own_ns, ns);
            ct_bump(&s->sample_wait_ns, wait);
            ct_max(&s->sample_wait_min_not, ~wait);
        }
    }
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

/* The executable file mappings, for the front end to resolve call sites (addr2line). */
static void ct_read_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    size_t used = 0;
    char line[4096 + 128];
    ct_maps[0] = '\0';
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        char perms[8] = "";
        if (sscanf(line, "%*s %7s", perms) != 1 || perms[2] != 'x' || strchr(line, '/') == NULL)
            continue;
        size_t len = strlen(line);
        if (used + len + 5 >= sizeof ct_maps)
            break;
        memcpy(ct_maps + used, "map ", 4);
        memcpy(ct_maps + used + 4, line, len + 1);
        used += len + 4;
    }
    fclose(f);
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
    ct_read_maps();
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        ct_served[c] = ct_active[c];
        ct_active[c] = 1;
    }
    ct_profrun_on = 1;
    ct_p2p_on = 1;
    ct_tsc = ct_tsc_trusted();
    ct_ns_init = ct_profrun_ns();
    ct_tick_init = ct_profrun_ticks();
    ct_profcomm_start(every, agreed[CT_PR_BUDGET], ct_ns_init, ct_mt);
}

/* ---- MPI_Finalize: environment and tables to dir/rank-N -------------------------------------- */

/* MPI_T control variables that matter to advice: eager/rendezvous limits of the transports and
 * collective algorithm selection (Open MPI coll_tuned_*, MPICH MPIR_CVAR_*_ALGORITHM). */
static int ct_cvar_wanted(const char *name)
{
    static const char *const keys[] = {"eager", "rndv", "rendezvous", "algorithm", "coll_tuned",
                                       "max_send_size", "ASYNC_PROGRESS"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcasestr(name, keys[i]) != NULL)
            return 1;
    /* Open MPI's component selections: which transport's thresholds apply. */
    return strcmp(name, "pml") == 0 || strcmp(name, "btl") == 0;
}

static void ct_cvar_print(FILE *out, int index, const char *name, MPI_Datatype type)
{
    MPI_T_cvar_handle handle;
    int count;
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return;
    union { int i; unsigned u; long l; unsigned long ul; long long ll; unsigned long long ull;
            double d; char s[512]; } v;
    memset(&v, 0, sizeof v);
    if (count == 1 || type == MPI_CHAR) {
        if ((type != MPI_CHAR || count < (int)sizeof v.s)
            && MPI_T_cvar_read(handle, &v) == MPI_SUCCESS) {
            if (type == MPI_INT) fprintf(out, "cvar %s %d\n", name, v.i);
            else if (type == MPI_UNSIGNED) fprintf(out, "cvar %s %u\n", name, v.u);
            else if (type == MPI_LONG) fprintf(out, "cvar %s %ld\n", name, v.l);
            else if (type == MPI_UNSIGNED_LONG) fprintf(out, "cvar %s %lu\n", name, v.ul);
            else if (type == MPI_LONG_LONG) fprintf(out, "cvar %s %lld\n", name, v.ll);
            else if (type == MPI_UNSIGNED_LONG_LONG) fprintf(out, "cvar %s %llu\n", name, v.ull);
            else if (type == MPI_DOUBLE) fprintf(out, "cvar %s %.17g\n", name, v.d);
            else if (type == MPI_CHAR) fprintf(out, "cvar %s %s\n", name, v.s[0] ? v.s : "-");
        }
    }
    MPI_T_cvar_handle_free(&handle);
}

/* Open MPI before 5 loads every component's parameters at the first MPI_T_init_thread: 0.21 s
 * here, 3% of an ExaML run, on the critical path of MPI_Finalize. There the front end reads the
 * same variables with the library's ompi_info (advise/ompi_cvars.py) instead. */
static int ct_mpit_costly(const char *library)
{
    return strncmp(library, "Open MPI v", 10) == 0 && library[10] >= '1' && library[10] <= '4'
           && library[11] == '.';
}

static void ct_write_cvars(FILE *out, const char *library)
{
    int provided, num;
    if (ct_mpit_costly(library)) {
        fprintf(out, "cvars_skipped ompi_info\n");
        return;
    }
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_cvar_get_num(&num) == MPI_SUCCESS) {
        for (int i = 0; i < num; i++) {
            char name[256], desc[8];
            int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope;
            MPI_Datatype type;
            MPI_T_enum etype;
            if (MPI_T_cvar_get_info(i, name, &nlen, &verb, &type, &etype, desc, &dlen, &bind,
                                    &scope) != MPI_SUCCESS)
                continue;
            if (bind == MPI_T_BIND_NO_OBJECT && ct_cvar_wanted(name))
                ct_cvar_print(out, i, name, type);
        }
    }
    MPI_T_finalize();
}

static void ct_write_env(FILE *out, uint64_t wall)
{
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int len = 0;
    PMPI_Get_processor_name(host, &len);
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl != NULL)
        *nl = '\0';
    const char *omp = getenv("OMP_NUM_THREADS");
    fprintf(out, CT_PROFRUN_MAGIC " %d\nrank %d\nnprocs %d\nwall_ns %llu\nhost %s\n"
                 "library %s\ncores_online %ld\nomp_num_threads %s\nsample_every %lu\n",
            CT_PROFRUN_VERSION, ct_rank_, ct_nprocs_, (unsigned long long)wall, host, lib,
            sysconf(_SC_NPROCESSORS_ONLN), omp != NULL && omp[0] ? omp : "-", ct_every);
    fprintf(out, "sample_budget_ppm %llu\n", (unsigned long long)ct_budget_ppm);
    cpu_set_t set;
    CPU_ZERO(&set);
    fprintf(out, "affinity");
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                fprintf(out, " %d", c);
    fprintf(out, "\n");
    fputs(ct_maps, out);
    ct_topo_write(out);
    ct_write_cvars(out, lib);
}

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
    uint64_t wall = ct_profrun_ns() - ct_ns_init;
    ct_ns_per_tick = ct_profrun_ns_per_tick();
    ct_profrun_on = 0;
    ct_p2p_on = 0;
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
    ct_write_env(out, wall);
    fprintf(out, "lost %llu %llu\n", (unsigned long long)atomic_load(&ct_coll_lost),
            (unsigned long long)atomic_load(&ct_p2p_lost));
    ct_write_slots(out, ct_coll_slots, CT_COLL_SLOTS, 1);
    ct_write_slots(out, ct_p2p_slots, CT_P2P_SLOTS, 0);
    ct_profcomm_write(out, ct_ns_per_tick);
    fprintf(out, "end\n");
    if (fclose(out) != 0 || rename(tmp, path) != 0)
        ct_message("warning: COLLTUNE_PROFILE_RUN: cannot write %s: %s", path, strerror(errno));
}

/*
 * Learning mode (docs/select.md): rank-consistent draws over each collective's portfolio and
 * sampled tracing, step 3 of the decision point.
 *
 * Rank consistency: a draw is a function of the seed (rank 0's, agreed at MPI_Init), the
 * communicator's id and its own call counter, and the call's uniform arguments. The counter and
 * the id live in a keyval attribute created by the first collective on the communicator: every
 * rank of the communicator calls that collective, so it is a point where the ranks can agree on
 * an id (the id of the communicator's rank 0) and on the node layout, with PMPI collectives that
 * bypass the interposer. MPI orders collectives on one communicator identically on every rank,
 * so the counters advance in step; the budget of explored calls is counted per communicator for
 * the same reason (a per-process count would differ between ranks of different sub-communicators
 * and make them draw differently). So is its spread: a cap of explored calls per (collective,
 * size bin) of the communicator (nodes and ppn are fixed by the communicator, so that is its
 * cell), counted in an array allocated with the state: without it an application whose first
 * calls are of one kind spends the whole budget there (HPCC: alltoall, benchmarks/learn).
 *
 * Tracing (trace.c): a buffer allocated at MPI_Init, filled on the full path below while it is
 * open. A rank that neither traces nor checks, or whose trace is closed, takes the short path of
 * ct_learn_dispatch on exploit cells: the erroneous-call check from the communicator's cached
 * size and rank, the cell's byte, the call counter (benchmarks/learning_runtime has the
 * instruction counts).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ct_tls.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_core.h"
#include "ct_layout.h"
#include "ct_learn.h"
#include "ct_member.h"
#include "ct_select.h"
#include "ct_settings.h"
#include "ct_watch.h"

static ct_select *ct_table;
static int ct_unlisted_fixed;   /* the table's unlisted cells never explore */
int ct_checking;
static uint64_t ct_seed, ct_budget, ct_cell_budget;
static int ct_keyval = MPI_KEYVAL_INVALID;
static int ct_nbins[3];
static uint32_t ct_size_stride;     /* nbins[1] * nbins[2]: cube index = size bin * this + np_cell */
static const uint8_t *ct_codes[CT_SELECT_PORTFOLIOS];   /* the table's cubes (ct_select_codes) */
/* The short path's cubes (ct_short_code), by port, read through a communicator's `codes`: while
 * its budget lasts, ct_live (the table's cube, with every unlisted cell already its settled code
 * where the table never explores unlisted cells, else NULL for a port without a cube); once it is
 * spent, ct_spent (every cell its settled code: an exploit cell's own, an explore cell's best
 * member, an unlisted cell's default), so that a spent cell is one load, as an exploit cell is.
 * Made at MPI_Init from the table alone: the same on every rank. */
static const uint8_t *ct_live[CT_SELECT_PORTFOLIOS], *ct_spent[CT_SELECT_PORTFOLIOS];
static uint8_t *ct_short_cubes;   /* the memory of the cubes ct_live and ct_spent made */
static atomic_uint ct_comms_created;
static int ct_world_rank;

static int16_t ct_member_variant[CT_SELECT_PORTFOLIOS][CT_SELECT_MAX_MEMBERS];
/* The learning mode decides MPI_I<coll> (MPI_<Coll>_init): some nonblocking (persistent)
 * portfolio the table may explore or exploit has a library member proven in some class. */
CT_HIDDEN int ct_learn_nonblocking, ct_learn_persistent;
/* the ct_fn_id of MPI_I<coll> and of MPI_<Coll>_init (their int bindings), by form - 1 */
static int ct_started_fn[2][CT_NUM_COLLECTIVES];
static void **ct_learn_lib_slot(MPI_Comm comm);
static const char *ct_select_path;

/* ---- settings at MPI_Init ------------------------------------------------------------------ */

static const char *ct_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

int ct_learn_wanted(void)
{
    return ct_env(CT_ENV_SELECT) != NULL || ct_env(CT_ENV_TRACE_DIR) != NULL;
}

/* `portfolio`: ct_libalg_setup's hash; it ran before, so that tables may name its members. */
int ct_learn_prepare(uint64_t slots[CT_LEARN_SLOTS], uint64_t portfolio, char *err, size_t errlen)
{
    memset(slots, 0, CT_LEARN_SLOTS * sizeof *slots);
    ct_select_path = ct_env(CT_ENV_SELECT);
    if (!ct_learn_wanted())
        return CT_LEARN_OFF;
    int state = CT_LEARN_OK;
    if (ct_select_path != NULL && strcmp(ct_select_path, "-") != 0) {
        if (ct_select_load(ct_select_path, &ct_table, err, errlen) != 0)
            state = CT_LEARN_BAD;
    } else {
        ct_table = ct_select_uniform_table();
        if (ct_table == NULL) {
            snprintf(err, errlen, "out of memory");
            state = CT_LEARN_BAD;
        }
    }
    ct_budget = ct_select_budget(ct_table);
    const char *budget = ct_env(CT_ENV_SELECT_BUDGET);
    if (state == CT_LEARN_OK && budget != NULL && ct_parse_u64(budget, &ct_budget) != 0) {
        snprintf(err, errlen, "COLLTUNE_SELECT_BUDGET=%s is not a whole number", budget);
        state = CT_LEARN_BAD;
    }
    ct_cell_budget = ct_select_cell_budget(ct_table);
    const char *cell_budget = ct_env(CT_ENV_SELECT_CELL_BUDGET);
    if (state == CT_LEARN_OK && cell_budget != NULL
        && ct_parse_u64(cell_budget, &ct_cell_budget) != 0) {
        snprintf(err, errlen, "COLLTUNE_SELECT_CELL_BUDGET=%s is not a whole number", cell_budget);
        state = CT_LEARN_BAD;
    }
    uint64_t seed = 0;
    const char *fixed = ct_env(CT_ENV_SELECT_SEED);
    if (state == CT_LEARN_OK && fixed != NULL && ct_parse_u64(fixed, &seed) != 0) {
        snprintf(err, errlen, "COLLTUNE_SELECT_SEED=%s is not a whole number below 2^64", fixed);
        state = CT_LEARN_BAD;
    }
    if (fixed == NULL) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ct_splitmix64(((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec)
                             ^ (uint64_t)getpid() << 32);
    }
    uint64_t h = ct_select_hash(ct_table) ^ ct_splitmix64(ct_splitmix64(ct_budget) ^ ct_cell_budget)
                 ^ ct_splitmix64(portfolio);
    slots[CT_L_STATE] = (uint64_t)state;
    slots[CT_L_STATE_NOT] = ~(uint64_t)state;
    slots[CT_L_HASH] = h;
    slots[CT_L_HASH_NOT] = ~h;
    slots[CT_L_SEED] = seed;   /* only rank 0's survives: see ct_learn_start */
    return state;
}

/* A one-entry cache per thread of the last communicator's state: Open MPI's attribute lookup
 * alone costs ~140 instructions per call. A freed communicator's handle can be reused for a new
 * one, so every delete bumps a generation that invalidates all caches. `state` NULL: the
 * communicator has no state yet (its started calls came before its first blocking collective,
 * which makes it), so that such calls do not ask for the attribute again each time (128 + 30
 * instructions per MPI_Iallreduce on Open MPI 5.0.11, for the whole run of a communicator that
 * only carries nonblocking collectives). Making a state bumps the generation too: a thread that
 * kept "no state" for the communicator must not go on leaving its started calls to the library
 * while the other ranks decide theirs (they would run different algorithms). A freed
 * communicator without a state has no attribute to delete: a new one with its handle has no state
 * either, so a "no state" entry stays true for it. */
typedef struct ct_comm_cache {
    MPI_Comm comm;
    struct ct_comm_state *state;
    unsigned generation;
} ct_comm_cache;
static atomic_uint ct_generation = 1;
static _Thread_local ct_comm_cache ct_cache CT_TLS_MODEL;

static int ct_comm_delete(MPI_Comm comm, int keyval, void *attribute, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    atomic_fetch_add_explicit(&ct_generation, 1, memory_order_release);
    if (attribute != NULL) {
        ct_trace_comm_gone(attribute);
        ct_libalg_comm_free(((ct_comm_state *)attribute)->lib);
    }
    free(attribute);
    return MPI_SUCCESS;
}

/* Whether a call of a started form (nonblocking, persistent) can ever be served by a member:
 * the table lists its portfolio or explores unlisted cells, and one of the portfolio's library
 * members passed some class of the proof (`colltune selftest --nonblocking`, `--persistent`).
 * Otherwise MPI_I<coll> (MPI_<Coll>_init) keeps its pass-through and the Wait/Test family its
 * own (nothing to follow). */
static int ct_decides_form(enum ct_form form)
{
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        int p = (int)form * CT_NUM_COLLECTIVES + c;
        if (ct_codes[p] == NULL && ct_unlisted_fixed)
            continue;
        for (int m = 1; m < ct_select_portfolio_size(p); m++)
            if (ct_proof_some(ct_member_variant[p][m]))
                return 1;
    }
    return 0;
}

/* ct_live and ct_spent from the table (after ct_codes and ct_nbins): one cube per port with a
 * cube of its own, and one cube of 1s (every cell its default) that the ports without one share.
 * -1: out of memory. */
static int ct_short_setup(void)
{
    size_t cells = (size_t)ct_nbins[0] * (size_t)ct_nbins[1] * (size_t)ct_nbins[2];
    size_t cubes = 1;
    for (int p = 0; p < CT_SELECT_PORTFOLIOS; p++)
        cubes += ct_codes[p] != NULL ? 2 : 0;
    ct_short_cubes = malloc(cubes * cells);
    if (ct_short_cubes == NULL)
        return -1;
    uint8_t *next = ct_short_cubes;
    memset(next, 1, cells);   /* no cube: every cell is unlisted, and settles on default */
    const uint8_t *defaults = next;
    next += cells;
    for (int p = 0; p < CT_SELECT_PORTFOLIOS; p++) {
        if (ct_codes[p] == NULL) {
            ct_live[p] = ct_unlisted_fixed ? defaults : NULL;
            ct_spent[p] = defaults;
            continue;
        }
        uint8_t *live = next, *spent = next + cells;
        next += 2 * cells;
        for (size_t c = 0; c < cells; c++) {
            uint8_t settled = (uint8_t)ct_select_settled_code(ct_table, p, (uint32_t)c);
            live[c] = ct_codes[p][c] == 0 && ct_unlisted_fixed ? settled : ct_codes[p][c];
            spent[c] = settled;
        }
        ct_live[p] = live;
        ct_spent[p] = spent;
    }
    return 0;
}

int ct_learn_start(const uint64_t agreed[CT_LEARN_SLOTS], int rank, int size, const char *err)
{
    ct_world_rank = rank;
    if (agreed[CT_L_STATE] == CT_LEARN_OFF && agreed[CT_L_STATE_NOT] == ~(uint64_t)CT_LEARN_OFF) {
        ct_learn_stop();   /* off everywhere (or switched off by a settings mismatch) */
        return 0;
    }
    int ok = agreed[CT_L_STATE] == CT_LEARN_OK && agreed[CT_L_STATE] == ~agreed[CT_L_STATE_NOT]
             && agreed[CT_L_HASH] == ~agreed[CT_L_HASH_NOT];
    if (!ok) {
        if (rank == 0 && agreed[CT_L_STATE] == CT_LEARN_BAD && err[0] != '\0')
            ct_message("warning: learning mode off, every call goes to the library: %s", err);
        else if (rank == 0)
            ct_message("warning: learning mode off, every call goes to the library: "
                       "COLLTUNE_SELECT, COLLTUNE_SELECT_BUDGET, COLLTUNE_SELECT_CELL_BUDGET or "
                       "the table's content differ across ranks, or the table is unreadable on some (use one file visible "
                       "to all ranks, e.g. with `colltune run --learn`)");
        ct_learn_stop();
        return 0;
    }
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ct_comm_delete, &ct_keyval, NULL)
        != MPI_SUCCESS) {
        if (rank == 0)
            ct_message("warning: learning mode off: no communicator attribute key");
        ct_learn_stop();
        return 0;
    }
    ct_seed = agreed[CT_L_SEED];
    if (ct_env_bool(CT_ENV_SELECT_CHECK, 0, &ct_checking) != 0 && rank == 0)
        ct_message("warning: COLLTUNE_SELECT_CHECK=%s is not 0 or 1; check mode is off",
                   getenv(CT_ENV_SELECT_CHECK));
    ct_select_nbins(ct_table, ct_nbins);
    ct_size_stride = (uint32_t)(ct_nbins[1] * ct_nbins[2]);
    ct_unlisted_fixed = ct_select_unlisted_fixed(ct_table);
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++)
        ct_codes[c] = ct_select_codes(ct_table, c);
    for (int c = 0; c < CT_SELECT_PORTFOLIOS; c++)
        for (int m = 0; m < ct_select_portfolio_size(c); m++)
            ct_member_variant[c][m] = (int16_t)ct_select_member_variant(c, m);
    if (ct_short_setup() != 0) {
        if (rank == 0)
            ct_message("warning: learning mode off: out of memory");
        ct_learn_stop();
        return 0;
    }
    ct_learn_nonblocking = ct_decides_form(CT_FORM_NONBLOCKING);
    ct_learn_persistent = ct_decides_form(CT_FORM_PERSISTENT);
    for (int fn = 0; fn < CT_NUM_FUNCTIONS; fn++)
        if (ct_fns[fn].coll >= 0 && ct_fns[fn].form != CT_FORM_BLOCKING && !ct_fns[fn].large)
            ct_started_fn[ct_fns[fn].form - 1][ct_fns[fn].coll] = fn;
    ct_trace_setup(rank, size, ct_now());
    ct_libalg_slots_from(ct_learn_lib_slot);
    if (ct_checking)
        atomic_store(&ct_recording, 1);
    return 1;
}

void ct_learn_describe(void)
{
    ct_message("learning: table %s (content hash %016llx, %zu bytes in memory), seed %llu, "
               "budget %llu explored calls per communicator, at most %llu per collective and size bin",
               ct_select_path ? ct_select_path : "-",
               (unsigned long long)ct_select_hash(ct_table), ct_select_bytes(ct_table),
               (unsigned long long)ct_seed, (unsigned long long)ct_budget,
               (unsigned long long)ct_cell_budget);
}

/* ---- communicator state -------------------------------------------------------------------- */

static uint32_t ct_sat32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Collective over `comm`: every rank of it is inside its first intercepted collective. */
static ct_comm_state *ct_comm_create(MPI_Comm comm)
{
    ct_comm_state *s = calloc(1, sizeof *s + (size_t)CT_SELECT_PORTFOLIOS * (size_t)ct_nbins[0]
                                                 * sizeof s->cell_explored[0]);
    if (s == NULL)
        return NULL;
    s->slot = CT_NO_SLOT;
    atomic_init(&s->codes, ct_budget == 0 ? ct_spent : ct_live);
    int rank, size;
    if (PMPI_Comm_test_inter(comm, &s->inter) != MPI_SUCCESS || s->inter
        || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS
        || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return s;   /* inter-communicators: the library serves every call */
    /* The id of the communicator is made by its rank 0: (world rank, that rank's count); it
     * reaches the other ranks in the layout's own reduction. ppn: the most ranks on one node. */
    uint64_t id = 0;
    if (rank == 0)
        id = (uint64_t)ct_world_rank << 20
             | (atomic_fetch_add_explicit(&ct_comms_created, 1, memory_order_relaxed) & 0xFFFFFu);
    ct_layout layout;
    if (ct_comm_layout(comm, &id, &layout) != MPI_SUCCESS) {
        s->inter = 1;   /* play safe: the library serves this communicator */
        return s;
    }
    s->id = (uint32_t)id;
    s->size = size;
    s->rank = rank;
    s->warm_left = ct_warmup_calls;
    if (ct_trace_active())
        s->slot = ct_trace_slot(s, (uint32_t)size, layout.nodes, layout.ppn_max);
    s->np_cell = (uint32_t)(ct_select_count_bin(layout.nodes, ct_nbins[1]) * ct_nbins[2]
                            + ct_select_count_bin(layout.ppn_max, ct_nbins[2]));
    return s;
}

/* The cache missed: the attribute, or a new state (the communicator's first collective; with
 * `create` 0, NULL instead). */
static __attribute__((noinline)) ct_comm_state *ct_comm_lookup(MPI_Comm comm, unsigned generation,
                                                               int create)
{
    void *value = NULL;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, ct_keyval, &value, &found) != MPI_SUCCESS)
        return NULL;
    ct_comm_state *s = found ? value : NULL;
    if (!found && create) {
        s = ct_comm_create(comm);
        if (s == NULL)
            return NULL;
        if (PMPI_Comm_set_attr(comm, ct_keyval, s) != MPI_SUCCESS) {
            free(s);
            return NULL;
        }
        /* every thread's "no state" for this communicator is stale from here */
        generation = atomic_fetch_add_explicit(&ct_generation, 1, memory_order_acq_rel) + 1;
    }
    /* `generation` was read before the attribute: a state made since by another thread has
     * bumped it, so this entry (a "no state" one too) is a miss at the next call */
    ct_cache = (ct_comm_cache){comm, s, generation};
    return s;
}

/* `create` 0: a state or NULL, from the cache ("no state" included). `create` 1: a cached "no
 * state" is a miss, so that the first blocking collective makes the state. */
static inline ct_comm_state *ct_comm_of(MPI_Comm comm, int create)
{
    unsigned generation = atomic_load_explicit(&ct_generation, memory_order_acquire);
    if (CT_LIKELY(ct_cache.comm == comm && ct_cache.generation == generation
                  && (!create || ct_cache.state != NULL)))
        return ct_cache.state;
    return ct_comm_lookup(comm, generation, create);
}

static inline ct_comm_state *ct_comm(MPI_Comm comm)
{
    return ct_comm_of(comm, 1);
}

/* The slot of `comm`'s state for its library members' communicators (libalg_online.c). */
static void **ct_learn_lib_slot(MPI_Comm comm)
{
    if (ct_keyval == MPI_KEYVAL_INVALID)
        return NULL;
    ct_comm_state *s = ct_comm(comm);
    return s != NULL ? &s->lib : NULL;
}

/* A blocking call that the library's warm-up passes to the library while counting (modes.c):
 * the communicator's state is made there all the same, as ct_learn_dispatch makes it without
 * counting, so that its started calls are decided during the warm-up in both routes. Safe for
 * the warm-up: MPICH counts only the blocking Bcast, Reduce, Barrier and Allreduce that reach
 * its node-level release_gather algorithms (its nonblocking and persistent collectives are
 * sched/tsp schedules of point-to-point calls that leave that count alone), and the state's own
 * collectives run on a duplicate (ct_comm_layout). */
void ct_learn_warmup_call(MPI_Comm comm)
{
    if (ct_keyval != MPI_KEYVAL_INVALID && comm != MPI_COMM_NULL)
        (void)ct_comm(comm);
}

/* ---- decision and tracing ------------------------------------------------------------------ */

/* colltune_call_bytes_in's sum(counts) * size(type) [/ p] (Allgatherv's mean block,
 * Reduce_scatter's total), inline: the same value, without its switch and call (63 of Open MPI's
 * 266 instructions per learned MPI_Allgatherv on 2 ranks). `mean` is a constant at each use. */
static inline __attribute__((always_inline)) int64_t ct_learn_sum_bytes(const ct_call *call,
                                                                         ct_bytes_form form,
                                                                         int comm_size, int mean)
{
    const int *counts;
    MPI_Datatype type;
    int64_t size;
    memcpy(&counts, (const char *)call + form.counts_at, sizeof counts);
    memcpy(&type, (const char *)call + form.type_at, sizeof type);
    /* a communicator's state has one rank at least: the first count starts the sum, so that the
     * loop has no empty case to guard and one turn fewer (5 instructions per call on 2 ranks) */
    int64_t sum = counts[0];
    for (const int *c = counts + 1, *end = counts + comm_size; c < end; c++)
        sum += *c;
    if (ct_type_size(type, &size) != MPI_SUCCESS)
        return -1;
    return mean ? sum * size / comm_size : sum * size;
}

/* colltune_call_bytes without its switch and calls for the count * size(type) collectives, the
 * sum forms and those of no size, and with the communicator's size the state keeps for the
 * others. The mean form is told from the sum form by its own code, the first one tested: no
 * test of `mean` on Allgatherv's path (2 instructions per call). */
static inline __attribute__((always_inline)) int64_t ct_learn_bytes(const ct_call *call,
                                                                     int comm_size)
{
    ct_bytes_form form = ct_bytes_forms[call->coll];
    if (form.count_at < 0) {
        if (form.count_at == CT_BYTES_MEAN)
            return ct_learn_sum_bytes(call, form, comm_size, 1);
        if (form.count_at == CT_BYTES_SUM)
            return ct_learn_sum_bytes(call, form, comm_size, 0);
        return form.count_at == CT_BYTES_ZERO ? 0 : colltune_call_bytes_in(call, comm_size);
    }
    int count;
    MPI_Datatype type;
    int64_t size;
    memcpy(&count, (const char *)call + form.count_at, sizeof count);
    memcpy(&type, (const char *)call + form.type_at, sizeof type);
    return ct_type_size(type, &size) == MPI_SUCCESS ? (int64_t)count * size : -1;
}

static inline atomic_uint *ct_cell_explored(ct_comm_state *s, int coll, uint32_t size_bin)
{
    return &s->cell_explored[(uint32_t)coll * (uint32_t)ct_nbins[0] + size_bin];
}

/* The communicator's budget, or its cap for this collective and size bin, is spent: explore and
 * unlisted cells pick what ct_select_settled_code says, as ct_select_pick_cell would. */
static inline int ct_settled(ct_comm_state *s, int coll, uint32_t size_bin)
{
    return atomic_load_explicit(&s->explored, memory_order_relaxed) >= ct_budget
           || atomic_load_explicit(ct_cell_explored(s, coll, size_bin), memory_order_relaxed)
                  >= ct_cell_budget;
}

/* An explored call drew a member not proven for its case class: draw again among the members
 * that are proven and applicable (the library default always is), with a second uniform number, so that exploration
 * serves proven (member, class) pairs only and spends no budget on refusals. Uniform arguments
 * only, like the first draw: every rank redraws alike. Returns the portfolio index. */
static __attribute__((noinline)) int ct_learn_redraw(const ct_call *call, int port,
                                                     ct_proof_need *need, uint32_t cell,
                                                     uint32_t comm_id, uint64_t index)
{
    uint64_t usable = 1;   /* index 0: the library's default */
    int m = ct_select_portfolio_size(port);
    for (int i = 1; i < m && i < 64; i++)
        if (ct_member_usable(ct_member_variant[port][i], call, need))
            usable |= (uint64_t)1 << i;
    double u = ct_select_uniform(ct_splitmix64(ct_seed ^ UINT64_C(0x5EED0F4EDBA11)), comm_id,
                                 index);
    int member = ct_select_redraw(ct_table, port, cell, usable, u);
    return member > 0 ? member : 0;
}

/* The short path's pick, shared by blocking (ct_learn_dispatch) and started (ct_learn_started)
 * calls of a rank that neither traces nor checks: the cell's code (1 + the portfolio index of the
 * member) when the cell picks without a draw, an exploit cell, or an explore or unlisted cell
 * whose budget is spent (a uniform table has only these), or an unlisted cell that never
 * explores; the call counter then advances as ct_learn_choose advances it, so a rank on this
 * path and a rank on the full path draw alike. 0: a draw is due, take the full path (counters
 * untouched). */
static inline __attribute__((always_inline)) unsigned ct_short_code(ct_comm_state *s, int port,
                                                                    int64_t bytes)
{
    uint32_t size_bin = (uint32_t)ct_select_size_bin((uint64_t)bytes, ct_nbins[0]);
    uint32_t cell = size_bin * ct_size_stride + s->np_cell;
    const uint8_t *codes = atomic_load_explicit(&s->codes, memory_order_relaxed)[port];
    unsigned code = codes != NULL ? codes[cell] : 0u;
    if (CT_UNLIKELY(code - 1u >= CT_SELECT_CODE_EXPLORE - 1u)) {
        /* an explore or unlisted cell while the communicator's budget lasts: its cap may be spent */
        if (!ct_settled(s, port, size_bin))
            return 0;
        code = ct_select_settled_code(ct_table, port, cell);
    }
    uint64_t index = atomic_load_explicit(&s->calls, memory_order_relaxed);
    atomic_store_explicit(&s->calls, index + 1, memory_order_relaxed);
    return code;
}

/* The decision of the learning mode, inlined into its callers: an exploit cell is one load from
 * the cube; explore cells, unlisted cells and the budget are ct_select_pick_cell's. `port`: the
 * portfolio, the call's collective or (MPI_I<coll>) its nonblocking one; both count on the
 * communicator's one call counter, as MPI orders both alike on every rank. */
static inline __attribute__((always_inline)) ct_decision ct_learn_choose(const ct_call *call,
                                                                         int port)
{
    ct_decision d = {-1, -1, CT_MODE_NONE, COLLTUNE_APPLICABLE};
    ct_comm_state *s = ct_comm_of(call->comm, port < CT_NUM_COLLECTIVES);
    if (CT_UNLIKELY(s == NULL || s->inter))
        return d;
    int64_t bytes = ct_learn_bytes(call, s->size);
    if (CT_UNLIKELY(bytes < 0))
        return d;
    uint64_t index = atomic_load_explicit(&s->calls, memory_order_relaxed);
    atomic_store_explicit(&s->calls, index + 1, memory_order_relaxed);
    uint32_t size_bin = (uint32_t)ct_select_size_bin((uint64_t)bytes, ct_nbins[0]);
    uint32_t cell = size_bin * ct_size_stride + s->np_cell;
    const uint8_t *codes = ct_codes[port];
    unsigned code = codes != NULL ? codes[cell] : 0;
    int member, outcome;
    if (CT_LIKELY(code - 1u < CT_SELECT_CODE_EXPLORE - 1u)) {
        member = (int)code - 1;
        outcome = CT_PICK_EXPLOIT;
    } else {
        /* Both counters advance only on explored calls: uniform ones, so in step on every rank. */
        atomic_uint *in_cell = ct_cell_explored(s, port, size_bin);
        uint64_t explored = atomic_load_explicit(&s->explored, memory_order_relaxed);
        unsigned spent = atomic_load_explicit(in_cell, memory_order_relaxed);
        member = ct_select_pick_cell(ct_table, port, cell, ct_seed, s->id, index,
                                     explored < ct_budget && spent < ct_cell_budget, &outcome);
        if (outcome == CT_PICK_EXPLORE) {
            atomic_store_explicit(&s->explored, explored + 1, memory_order_relaxed);
            atomic_store_explicit(in_cell, spent + 1, memory_order_relaxed);
            if (explored + 1 >= ct_budget)   /* at the same call on every rank */
                atomic_store_explicit(&s->codes, ct_spent, memory_order_relaxed);
        }
    }
    d.mode = outcome == CT_PICK_EXPLORE ? CT_MODE_EXPLORE : CT_MODE_EXPLOIT;
    unsigned redrawn = 0;
    if (member > 0) {
        int id = ct_member_variant[port][member];
        if (CT_UNLIKELY(outcome == CT_PICK_EXPLORE)) {
            /* An explored call is served by a proven member only, so the proof is asked first
             * and answered for the whole redraw at once; its answer stands for the member run. */
            ct_proof_need need = CT_PROOF_NEED_UNKNOWN;
            if (!ct_proof_meets_need(id, call, &need)) {
                redrawn = 0x80u;   /* status bit 7: drawn again */
                ct_count_redraw(id);   /* cheap enough unconditionally: the redraw is rare */
                member = ct_learn_redraw(call, port, &need, cell, s->id, index);
                id = member > 0 ? ct_member_variant[port][member] : -1;
            }
            d.reason = member > 0 ? ct_member_fits(id, call) : COLLTUNE_APPLICABLE;
        } else {
            d.reason = ct_member_applicable(id, call);
        }
        if (member > 0) {
            d.chosen = id;
            if (d.reason == COLLTUNE_APPLICABLE)
                d.variant = d.chosen;
        }
    }
    if (ct_trace_active()) {
        ct_pending_state = s;
        ct_trace_record *r = &ct_pending;
        r->comm = s->slot;
        r->call_lo = (uint16_t)index;
        r->collective = (uint8_t)port;   /* started forms: CT_SELECT_NONBLOCKING/PERSISTENT */
        r->member = (uint8_t)(member > 0 ? member : 0);
        r->status = (uint8_t)((unsigned)outcome | redrawn);
        r->msg_bytes = ct_sat32((uint64_t)bytes);
    }
    return d;
}

ct_decision ct_learn_decide(const ct_call *call)
{
    return ct_learn_choose(call, call->coll);
}

/* A started call whose cell picked without a draw (ct_short_code): the member of the form's
 * portfolio it names, if it may serve the call, else the library. */
static inline __attribute__((always_inline)) int ct_learn_start_picked(enum ct_form form,
                                                                        const ct_call *call,
                                                                        MPI_Info info,
                                                                        MPI_Request *request,
                                                                        ct_decision *d, int port,
                                                                        unsigned code)
{
    d->mode = CT_MODE_EXPLOIT;
    if (code > 1) {
        d->chosen = ct_member_variant[port][code - 1];
        d->reason = ct_member_applicable(d->chosen, call);
        if (d->reason == COLLTUNE_APPLICABLE) {
            d->variant = d->chosen;
            int rc = ct_libalg_start(call, d, info, request);
            if (d->variant >= 0)
                return rc;
        }
    }
    return ct_start_library(form, call, info, request);   /* also: no member of this form */
}

/* The rest of a started call after the short path (ct_learn_start_call): a member that its cell
 * picked without a draw (`code` > 1), or the full path (`code` 0: a draw is due, or the rank
 * traces or checks). Out of line, with its own decision where nobody counts it (`d` NULL), so
 * that the short path's library start is a tail call with no decision in its frame (10 of the
 * 25 instructions that MPI_Iallreduce's learning path took over MPI_Allreduce's on Open MPI
 * 5.0.11: six saved registers, the decision's stores, the call and return around
 * colltune_start_library). */
static __attribute__((noinline)) int ct_learn_start_rest(const ct_call *call, MPI_Info info,
                                                         MPI_Request *request, ct_decision *d,
                                                         int port, unsigned code)
{
    enum ct_form form = (enum ct_form)(port / CT_NUM_COLLECTIVES);
    ct_decision own = {-1, -1, CT_MODE_NONE, COLLTUNE_APPLICABLE};
    if (d == NULL)
        d = &own;
    if (code != 0)
        return ct_learn_start_picked(form, call, info, request, d, port, code);
    *d = ct_learn_choose(call, port);
    int traced = ct_learn_tracing();
    uint64_t start = traced ? ct_now() : 0;
    int rc = MPI_SUCCESS;
    if (d->variant >= 0)
        rc = ct_libalg_start(call, d, info, request);
    if (d->variant < 0)   /* the library's choice, or no member of this form (ct_libalg_start) */
        rc = ct_start_library(form, call, info, request);
    if (traced && d->mode != CT_MODE_NONE) {
        uint64_t end = ct_now();
        uint64_t record = ct_trace_started(d, start, end);
        if (record != 0 && rc == MPI_SUCCESS && *request != MPI_REQUEST_NULL)
            ct_req_learned(*request, ct_started_fn[form - 1][call->coll], record,
                           form == CT_FORM_PERSISTENT ? 0 : end - start);
    }
    return rc;
}

/* MPI_I<coll> (MPI_<Coll>_init) of a row the learning mode decides (modes.c, while
 * ct_learn_nonblocking, ct_learn_persistent): a member of the form's portfolio drawn from the
 * communicator's call counter like a blocking call's, so every rank draws the same (MPI orders
 * nonblocking calls and persistent inits with the blocking collectives of the communicator); the
 * algorithm is fixed when the call starts (when the persistent request is made, for all its
 * starts: MPI does not order the starts across ranks, docs/select.md) and nothing waits here.
 * On a tracing rank the call gets its record now, in call order; requests.c follows the request
 * and completes the record (ct_trace_completed): a nonblocking call's reward is the start's time
 * plus that of the Wait/Test calls that were given this request alone, a persistent request's the
 * mean of that over its starts (MPI_Start's time instead of the init's). `d`: the decision, for
 * counting; NULL where nothing counts it. */
static inline __attribute__((always_inline)) int ct_learn_start_call(enum ct_form form,
                                                                      const ct_call *call,
                                                                      MPI_Info info,
                                                                      MPI_Request *request,
                                                                      ct_decision *d)
{
    /* A communicator's state is made by its first blocking collective (the ranks agree on its
     * id and layout there, with blocking calls: inside a start they could deadlock against a
     * rank that communicates before starting, as MPI allows); until then the library starts
     * the calls, alike on every rank, since collectives are ordered alike. */
    ct_comm_state *s = call->comm != MPI_COMM_NULL ? ct_comm_of(call->comm, 0) : NULL;
    if (s == NULL || s->inter || ct_erroneous_intra(call, s->size, s->rank))
        return ct_start_library(form, call, info, request);
    int port = (int)form * CT_NUM_COLLECTIVES + call->coll;
    unsigned code = 0;
    if (CT_LIKELY(!atomic_load_explicit(&ct_recording, memory_order_relaxed))) {
        /* the blocking calls' short path (ct_learn_dispatch), with the same rules */
        int64_t bytes = ct_learn_bytes(call, s->size);
        if (CT_UNLIKELY(bytes < 0))
            return ct_start_library(form, call, info, request);
        code = ct_short_code(s, port, bytes);
        if (CT_LIKELY(code == 1)) {   /* member 0: default, the library */
            if (d != NULL)
                d->mode = CT_MODE_EXPLOIT;
            return ct_start_library(form, call, info, request);
        }
    }
    return ct_learn_start_rest(call, info, request, d, port, code);
}

int ct_learn_started(enum ct_form form, const ct_call *call, MPI_Info info, MPI_Request *request,
                     ct_decision *d)
{
    return ct_learn_start_call(form, call, info, request, d);
}

int ct_learn_dispatch_started(const ct_call *call, MPI_Request *request)
{
    return ct_learn_start_call(CT_FORM_NONBLOCKING, call, MPI_INFO_NULL, request, NULL);
}

static __attribute__((noinline)) int ct_learn_dispatch_full(const ct_call *call)
{
    ct_decision d = ct_learn_choose(call, call->coll);
    if (d.mode != CT_MODE_NONE && ct_learn_tracing())
        return ct_learn_run_traced(call, &d);
    if (d.variant >= 0)
        return ct_run_member(call, &d);
    return colltune_invoke_library(call);
}

/* The whole call when only the learning mode looks at the collective (modes.c routes it here
 * before its own erroneous-call check, whose root check alone costs three PMPI queries, 122
 * instructions per rooted call in Open MPI 4.1: issue 26). Its common case in few instructions:
 * a known intra-communicator, whose size and rank the state keeps, a rank that neither traces
 * nor checks (or whose trace is closed), past the library's warm-up, an exploit cell (or an
 * explore or unlisted cell once its budget is spent).
 * Anything else takes the full path before touching the counters. Erroneous calls go to the library untouched and uncounted,
 * as from modes.c; the communicator's state may be made by one (its first collective), which
 * is collective over a valid communicator like any other first call. */
int ct_learn_dispatch(const ct_call *call)
{
    if (CT_UNLIKELY(call->comm == MPI_COMM_NULL))
        return colltune_invoke_library(call);
    ct_comm_state *s = ct_comm(call->comm);
    if (CT_UNLIKELY(s == NULL || s->inter))
        return colltune_invoke_library(call);   /* what the full path decides for them */
    if (CT_UNLIKELY(ct_erroneous_intra(call, s->size, s->rank)))
        return colltune_invoke_library(call);
    if (CT_UNLIKELY(s->warm_left != 0)) {   /* the library's warm-up (warmup.c) */
        s->warm_left -= (uint32_t)ct_warmup_counted(call);
        return colltune_invoke_library(call);
    }
    if (CT_UNLIKELY(atomic_load_explicit(&ct_recording, memory_order_relaxed)))
        return ct_learn_dispatch_full(call);
    int64_t bytes = ct_learn_bytes(call, s->size);
    if (CT_UNLIKELY(bytes < 0))
        return colltune_invoke_library(call);
    unsigned code = ct_short_code(s, call->coll, bytes);
    if (CT_UNLIKELY(code == 0))
        return ct_learn_dispatch_full(call);
    if (code == 1)   /* member 0: default, the library */
        return colltune_invoke_library(call);
    ct_decision d = {ct_member_variant[call->coll][code - 1], -1, CT_MODE_EXPLOIT,
                     COLLTUNE_APPLICABLE};
    return ct_member_applicable(d.variant, call) == COLLTUNE_APPLICABLE
               ? ct_run_member(call, &d)
               : colltune_invoke_library(call);
}

/* ---- MPI_Finalize -------------------------------------------------------------------------- */

void ct_learn_finish(void)
{
    if (ct_checking)
        ct_check_report(ct_world_rank);
    ct_trace_finish(ct_seed, ct_select_hash(ct_table));
    ct_learn_stop();
}

void ct_learn_stop(void)
{
    ct_trace_free();
    ct_select_free(ct_table);
    ct_table = NULL;
    ct_checking = 0;
    ct_unlisted_fixed = 0;
    ct_learn_nonblocking = 0;
    ct_learn_persistent = 0;
    memset(ct_codes, 0, sizeof ct_codes);
    memset(ct_live, 0, sizeof ct_live);
    memset(ct_spent, 0, sizeof ct_spent);
    free(ct_short_cubes);
    ct_short_cubes = NULL;
    ct_libalg_slots_from(NULL);
    if (ct_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&ct_keyval);
    ct_keyval = MPI_KEYVAL_INVALID;
}

/*
 * The measurement loop (seed 000 Algorithm 1, ReproMPI-style raw records; docs/measurement.md).
 *
 * Per job, all variants run in the same launch in rounds: every round runs each variant once,
 * in an order drawn from a PRNG seeded identically on all ranks, so that drift within the launch
 * hits all variants alike. Rounds come in chunks of `check_every`; after a chunk the local
 * timings are reduced to rank 0 (max duration, max end, min start, late flag), rank 0 writes the
 * records, evaluates the stopping rules and broadcasts the decision. Nothing of this bookkeeping
 * falls inside a timed region.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, only for the clock test */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "ct_driver_record.h"
#include "ct_profile.h"

#define CT_MAX_LIBALGS 64
#define CT_MAX_REFS 32
#define CT_WINDOW_MAX_S 1.0

typedef struct libalg_slot {
    char name[CT_NAME_LEN];
    int rc;
    char err[256];
    ct_libalg alg;
} libalg_slot;

typedef struct run_ctx {
    const ct_bench_settings *st;
    MPI_Comm comm;
    int rank, size;
    FILE *out;               /* rank 0 only */
    ct_clock clock;
    double max_rtt;          /* over ranks, from the last clock synchronization */
    ct_profile *profile;
    libalg_slot libalgs[CT_MAX_LIBALGS];
    int nlibalgs;
    int selected;            /* library algorithm currently selected (MPICH), -1 none */
    struct { char coll[CT_NAME_LEN]; double t1; } refs[CT_MAX_REFS];
    int nrefs;
    const ct_job *job;       /* the job being measured, for error messages */
} run_ctx;

/* What one job's measurement produced, per variant. */
typedef struct job_result {
    ct_series series[CT_MAX_VARIANTS];
    ct_stop_state state[CT_MAX_VARIANTS];
    ct_stop_stats stats[CT_MAX_VARIANTS];
    long reps[CT_MAX_VARIANTS];      /* repetitions so far, warm-up included */
    long measured[CT_MAX_VARIANTS];  /* non warm-up repetitions */
    long valid[CT_MAX_VARIANTS];
    double window;
    int resyncs;
} job_result;

static void json_number(FILE *out, double value)
{
    if (isnan(value) || isinf(value))
        fputs("null", out);
    else
        fprintf(out, "%.9g", value);
}

/* ------------------------------------------------------------------------------------------- */
/* Variants */

static void skip_line(run_ctx *ctx, const ct_job *job, const char *variant, const char *reason)
{
    if (!ctx->out)
        return;
    fprintf(ctx->out, "{\"type\":\"skip\",\"job\":%d,\"variant\":", job->id);
    ct_out_json_string(ctx->out, variant);
    fputs(",\"reason\":", ctx->out);
    ct_out_json_string(ctx->out, reason);
    fputs("}\n", ctx->out);
}

static libalg_slot *libalg_get(run_ctx *ctx, const char *name, const char *coll, const char *alg)
{
    for (int i = 0; i < ctx->nlibalgs; i++)
        if (strcmp(ctx->libalgs[i].name, name) == 0)
            return &ctx->libalgs[i];
    if (ctx->nlibalgs == CT_MAX_LIBALGS)
        return NULL;
    libalg_slot *slot = &ctx->libalgs[ctx->nlibalgs++];
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->err[0] = '\0';
    slot->rc = ct_libalg_open(coll, alg, ctx->comm, &slot->alg, slot->err, sizeof slot->err);
    if (slot->rc != MPI_SUCCESS && slot->err[0] == '\0')
        snprintf(slot->err, sizeof slot->err, "MPI error %d", slot->rc);
    return slot;
}

static int prepare(run_ctx *ctx, const ct_variant *v);
static int invoke(const run_ctx *ctx, const ct_variant *v);

/* One call before measuring: a library that refuses the forced algorithm for this call (MPICH
 * with fallback=error, Open MPI's two_proc on more processes) says so with an error code on
 * every rank (its checks use uniform arguments), and the variant is skipped rather than
 * aborting the launch. Returns 1 if the algorithm ran everywhere. */
static int library_trial(run_ctx *ctx, const ct_variant *v, char *why, size_t whylen)
{
    int rc = prepare(ctx, v);
    if (rc == MPI_SUCCESS)
        rc = invoke(ctx, v);
    /* Back to the library's values at once: the next library variant reads them as its
     * originals when it is opened. */
    int restored = prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1});
    if (rc == MPI_SUCCESS)
        rc = restored;
    int ok = rc == MPI_SUCCESS, all = 0;
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
        all = 0;
    if (!all) {
        char text[MPI_MAX_ERROR_STRING] = "failed on another rank";
        int len;
        if (rc != MPI_SUCCESS)
            MPI_Error_string(rc, text, &len);
        /* MPICH's error text is a stack; its last line is the specific reason */
        size_t end = strlen(text);
        while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' '))
            text[--end] = '\0';
        const char *last = strrchr(text, '\n');
        snprintf(why, whylen, "the library refused this algorithm for this call: %.190s",
                 last ? last + 1 : text);
    }
    return all;
}

/* Decide how to run `name` for this job, or why it cannot run (returns 0 and fills why). */
static int resolve_variant(run_ctx *ctx, const ct_job *job, const ct_call *call,
                           const char *name, ct_variant *v, char *why, size_t whylen)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->call = *call;
    v->libalg = -1;
    v->index = -1;
    int barrier = strcmp(job->collective, "barrier") == 0;
    if (strcmp(name, "default") == 0 || strcmp(name, "default#aa") == 0) {
        v->kind = barrier ? CT_VK_BARRIER : (name[7] ? CT_VK_AA : CT_VK_DEFAULT);
        return 1;
    }
    if (barrier) {
        snprintf(why, whylen, "barrier is measured as `default` (and `default#aa`) only");
        return 0;
    }
    if (strcmp(name, "tuned") == 0) {
        if (!ctx->profile) {
            snprintf(why, whylen, "`tuned` needs --profile FILE");
            return 0;
        }
        v->kind = CT_VK_TUNED;
        return 1;
    }
    if (strncmp(name, "lib:", 4) == 0) {
        char coll[CT_NAME_LEN];
        const char *sep = strchr(name + 4, ':');
        size_t len = sep ? (size_t)(sep - (name + 4)) : 0;
        if (!sep || len >= sizeof coll || sep[1] == '\0') {
            snprintf(why, whylen, "library variants are named lib:<collective>:<algorithm>");
            return 0;
        }
        memcpy(coll, name + 4, len);
        coll[len] = '\0';
        if (strcmp(coll, job->collective) != 0) {
            snprintf(why, whylen, "an algorithm of %s, not of %s", coll, job->collective);
            return 0;
        }
        /* opening reads the library's current values as the ones to restore */
        if (prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1}) != MPI_SUCCESS) {
            snprintf(why, whylen, "cannot restore the library's algorithm settings");
            return 0;
        }
        libalg_slot *slot = libalg_get(ctx, name, coll, sep + 1);
        if (!slot) {
            snprintf(why, whylen, "more than %d library algorithms in one launch", CT_MAX_LIBALGS);
            return 0;
        }
        if (slot->rc != MPI_SUCCESS) {
            snprintf(why, whylen, "%s", slot->err);
            return 0;
        }
        v->kind = CT_VK_LIBRARY;
        v->libalg = (int)(slot - ctx->libalgs);
        if (slot->alg.comm != MPI_COMM_NULL)
            v->call.comm = slot->alg.comm;
        return library_trial(ctx, v, why, whylen);
    }
    v->kind = CT_VK_MOCKUP;
    v->index = colltune_variant_index(name);
    if (v->index < 0) {
        snprintf(why, whylen, "unknown variant");
        return 0;
    }
    if (colltune_variant_collective(v->index) != call->coll) {
        snprintf(why, whylen, "a variant of %s, not of %s",
                 colltune_collective_name(colltune_variant_collective(v->index)), job->collective);
        return 0;
    }
    colltune_reason reason = colltune_applicable(v->index, call);
    if (reason != COLLTUNE_APPLICABLE) {
        snprintf(why, whylen, "%s", colltune_reason_name(reason));
        return 0;
    }
    return 1;
}

/* MPICH reads the algorithm variable on every call: set it before the variant's repetitions,
 * restore the library's values before anything else runs. Outside the timed region. */
static int prepare(run_ctx *ctx, const ct_variant *v)
{
    int want = v->kind == CT_VK_LIBRARY ? v->libalg : -1;
    if (want == ctx->selected)
        return MPI_SUCCESS;
    int rc = MPI_SUCCESS;
    if (ctx->selected >= 0)
        rc = ct_libalg_restore(&ctx->libalgs[ctx->selected].alg);
    if (rc == MPI_SUCCESS && want >= 0)
        rc = ct_libalg_select(&ctx->libalgs[want].alg);
    ctx->selected = rc == MPI_SUCCESS ? want : ctx->selected;
    return rc;
}

/* Exactly the interposer's decision: profile lookup, applicability, else the library. */
static int invoke_tuned(const run_ctx *ctx, const ct_call *call)
{
    int variant = ct_profile_lookup(ctx->profile, call->coll, ctx->size, colltune_call_bytes(call));
    if (variant >= 0 && colltune_applicable(variant, call) == COLLTUNE_APPLICABLE)
        return colltune_invoke(variant, call);
    return colltune_invoke_library(call);
}

static int invoke(const run_ctx *ctx, const ct_variant *v)
{
    switch (v->kind) {
    case CT_VK_MOCKUP: return colltune_invoke(v->index, &v->call);
    case CT_VK_TUNED: return invoke_tuned(ctx, &v->call);
    case CT_VK_BARRIER: return PMPI_Barrier(v->call.comm);
    case CT_VK_DEFAULT: case CT_VK_AA: case CT_VK_LIBRARY: break;
    }
    return colltune_invoke_library(&v->call);
}

/* ------------------------------------------------------------------------------------------- */
/* Repetitions */

typedef struct chunk {
    int nreps;
    int *order;        /* variant of each repetition */
    double *local;     /* 4 per repetition: duration, global end, -global start, late */
    double *global;    /* rank 0: their maxima over ranks */
    double *target;    /* window start of each repetition */
} chunk;

static int chunk_alloc(chunk *c, int reps)
{
    c->order = malloc((size_t)reps * sizeof *c->order);
    c->local = malloc((size_t)reps * 4 * sizeof *c->local);
    c->global = malloc((size_t)reps * 4 * sizeof *c->global);
    c->target = malloc((size_t)reps * sizeof *c->target);
    return c->order && c->local && c->global && c->target ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

static void chunk_free(chunk *c)
{
    free(c->order);
    free(c->local);
    free(c->global);
    free(c->target);
}

/* Rounds of all variants, each round in a fresh random order (same on all ranks). */
static void chunk_order(chunk *c, int rounds, int nv, uint64_t *rng)
{
    c->nreps = rounds * nv;
    for (int r = 0; r < rounds; r++) {
        int *perm = c->order + r * nv;
        for (int i = 0; i < nv; i++)
            perm[i] = i;
        for (int i = nv - 1; i > 0; i--) {
            int j = (int)(ct_rand_next(rng) % (uint64_t)(i + 1));
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
}

/* The order the jobs of a launch run in, drawn from the launch seed (the same on all ranks).
 * Whatever disturbs the start or the end of a launch (the launcher and its daemons settling or
 * tearing down, a neighbour's process) then falls on different points in different launches,
 * not on the first and last job of every launch: measured on a loaded node, the first job's
 * per-launch median was over twice its median in 7-8 of 20 busy-polling Open MPI launches
 * against 0-3 for most others (benchmarks/compare/README.md). Returns NULL when out of memory. */
static int *job_order(uint64_t seed, int njobs)
{
    int *order = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *order);
    uint64_t rng = seed ^ UINT64_C(0xD1B54A32D192ED03);
    if (!order)
        return NULL;
    for (int i = 0; i < njobs; i++)
        order[i] = i;
    for (int i = njobs - 1; i > 0; i--) {
        int j = (int)(ct_rand_next(&rng) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return order;
}

/* Which call failed, on the ranks where it did (the library's own text follows from main). */
static void report_failure(const run_ctx *ctx, const ct_variant *v, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    fprintf(stderr, "colltune-bench: rank %d: variant %s of job %d (%s, %lld bytes) failed: %s\n",
            ctx->rank, v->name, ctx->job->id, ctx->job->collective, (long long)ctx->job->msg_bytes,
            text);
}

static int run_chunk(run_ctx *ctx, const ct_variant *vars, chunk *c, ct_sync_method sync,
                     double start, double window)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < c->nreps && rc == MPI_SUCCESS; k++) {
        const ct_variant *v = &vars[c->order[k]];
        double *rec = c->local + 4 * k;
        int late = 0;
        c->target[k] = start + k * window;
        if ((rc = prepare(ctx, v)) != MPI_SUCCESS)
            break;
        if (sync == CT_SYNC_BARRIER)
            rc = PMPI_Barrier(ctx->comm);
        else if (sync == CT_SYNC_DISSEMINATION)
            rc = ct_dissemination_barrier(ctx->comm);
        else
            late = ct_wait_until(&ctx->clock, c->target[k]);
        if (rc != MPI_SUCCESS)
            break;
        double t0 = MPI_Wtime();
        rc = invoke(ctx, v);
        double t1 = MPI_Wtime();
        if (rc != MPI_SUCCESS) {
            report_failure(ctx, v, rc);
            break;
        }
        rec[0] = t1 - t0;
        rec[1] = t1 + ctx->clock.offset;
        rec[2] = -(t0 + ctx->clock.offset);
        rec[3] = late;
    }
    if (rc != MPI_SUCCESS)
        return rc;
    return PMPI_Reduce(c->local, c->global, 4 * c->nreps, MPI_DOUBLE, MPI_MAX, 0, ctx->comm);
}

/* Rank 0: write the chunk's records, feed the stopping series. Returns the invalid count. */
static int absorb_chunk(run_ctx *ctx, const ct_job *job, const chunk *c, int warmup,
                        ct_sync_method sync, job_result *res, double *max_runtime, int emit)
{
    int invalid = 0;
    for (int k = 0; k < c->nreps; k++) {
        int vi = c->order[k];
        const double *g = c->global + 4 * k;
        double runtime = g[0], end = g[1], begin = -g[2];
        int valid = sync != CT_SYNC_WINDOW || g[3] == 0.0;
        double makespan = end - (sync == CT_SYNC_WINDOW ? c->target[k] : begin);
        long rep = res->reps[vi]++;
        if (runtime > *max_runtime)
            *max_runtime = runtime;
        invalid += !valid;
        if (emit)
            fprintf(ctx->out, CT_RECORD_FORMAT, job->id, vi, rep, warmup, valid, runtime, makespan,
                    begin, end);
        if (warmup)
            continue;
        res->measured[vi]++;
        if (valid) {
            res->valid[vi]++;
            int rc = ct_series_push(&res->series[vi], ctx->st->metric_makespan ? makespan : runtime);
            if (rc != MPI_SUCCESS)
                return -1;
        }
    }
    return invalid;
}

/* Rank 0: stop now? Sets per-variant states when the answer is yes. */
static int decide(run_ctx *ctx, const ct_stop_settings *stop, int nv, job_result *res,
                  long rounds, double elapsed)
{
    int all = 1;
    for (int v = 0; v < nv; v++) {
        int ok = ct_stop_satisfied(stop, &res->series[v], &res->stats[v]);
        res->state[v] = ok ? CT_STOP_CONVERGED : CT_STOP_RUNNING;
        all &= ok;
    }
    (void)ctx;
    ct_stop_state end = CT_STOP_RUNNING;
    if (all)
        end = CT_STOP_CONVERGED;
    else if (rounds >= stop->max_reps)
        end = CT_STOP_MAX_REPS;
    else if (stop->time_budget_s > 0 && elapsed >= stop->time_budget_s)
        end = CT_STOP_TIME_BUDGET;
    if (end == CT_STOP_RUNNING)
        return 0;
    for (int v = 0; v < nv; v++)
        if (res->state[v] == CT_STOP_RUNNING)
            res->state[v] = end;
    return 1;
}

static int clock_sync(run_ctx *ctx)
{
    int rc = ct_clock_sync(ctx->comm, ctx->st->pingpongs, &ctx->clock);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allreduce(&ctx->clock.rtt, &ctx->max_rtt, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    return rc;
}

/* Rounds in the next chunk: up to the next check, but no further than the time budget is
 * expected to reach (a chunk of 8 MiB all-to-alls must not overrun it tenfold). */
static int chunk_rounds(const ct_stop_settings *stop, int check, long rounds, double round_time,
                        double elapsed)
{
    long todo = stop->max_reps - rounds < check ? stop->max_reps - rounds : check;
    if (stop->time_budget_s > 0 && round_time > 0) {
        double fit = (stop->time_budget_s - elapsed) / round_time;
        if (fit < (double)todo)
            todo = fit < 1.0 ? 1 : (long)fit;
    }
    return (int)todo;
}

/* Measure the variants of one job until the stopping rules say so. */
static int measure(run_ctx *ctx, const ct_job *job, const ct_variant *vars, int nv,
                   const ct_stop_settings *stop, job_result *res, int emit)
{
    const ct_bench_settings *st = ctx->st;
    int rc, check = stop->check_every > 0 ? stop->check_every : 1;
    int warm_rounds = stop->warmup > 0 ? stop->warmup : 0;
    int max_rounds = check > warm_rounds ? check : warm_rounds;
    uint64_t rng = st->seed ^ ((uint64_t)(job->id + 1) * UINT64_C(0x9E3779B97F4A7C15));
    chunk c;
    memset(res, 0, sizeof *res);
    for (int v = 0; v < nv; v++)
        ct_series_init(&res->series[v]);
    if ((rc = chunk_alloc(&c, max_rounds * nv)) != MPI_SUCCESS)
        goto done;
    if ((rc = clock_sync(ctx)) != MPI_SUCCESS)
        goto done;
    double t_begin = MPI_Wtime(), max_runtime = 0.0;
    /* Warm-up rounds also size the window: no window exists yet, so they use the
     * dissemination barrier under window synchronization. */
    ct_sync_method warm_sync = st->sync == CT_SYNC_WINDOW ? CT_SYNC_DISSEMINATION : st->sync;
    if (warm_rounds > 0) {
        chunk_order(&c, warm_rounds, nv, &rng);
        if ((rc = run_chunk(ctx, vars, &c, warm_sync, 0.0, 0.0)) != MPI_SUCCESS)
            goto done;
        if (ctx->rank == 0 && absorb_chunk(ctx, job, &c, 1, warm_sync, res, &max_runtime, emit) < 0)
            rc = MPI_ERR_NO_MEM;
    }
    /* decision: continue, next window start, window length, resync, rounds in the next chunk */
    double msg[5] = {1.0, 0.0, 0.0, 0.0, 0.0}, window0 = 0.0, round_time = 0.0;
    long rounds = 0;
    if (ctx->rank == 0) {
        msg[2] = window0 = 2.0 * max_runtime + 4.0 * ctx->max_rtt + 1e-6;
        msg[1] = ct_global_time(&ctx->clock) + msg[2] + 10.0 * ctx->max_rtt + 1e-4;
        if (warm_rounds > 0)
            round_time = (MPI_Wtime() - t_begin) / warm_rounds;
        msg[4] = chunk_rounds(stop, check, rounds, round_time, MPI_Wtime() - t_begin);
    }
    for (;;) {
        int bc = PMPI_Bcast(msg, 5, MPI_DOUBLE, 0, ctx->comm);
        if (rc == MPI_SUCCESS)
            rc = bc;
        if (rc != MPI_SUCCESS || msg[0] == 0.0)
            break;
        if (msg[3] != 0.0) {
            if ((rc = clock_sync(ctx)) != MPI_SUCCESS)
                break;
            res->resyncs++;
            /* A resync moved the clocks: the start was computed on the old ones. */
            msg[1] = 0.0;
            if (ctx->rank == 0)
                msg[1] = ct_global_time(&ctx->clock) + msg[2] + 10.0 * ctx->max_rtt + 1e-4;
            if ((rc = PMPI_Bcast(&msg[1], 1, MPI_DOUBLE, 0, ctx->comm)) != MPI_SUCCESS)
                break;
        }
        res->window = msg[2];
        int todo = (int)msg[4];
        double t_chunk = MPI_Wtime();
        chunk_order(&c, todo, nv, &rng);
        if ((rc = run_chunk(ctx, vars, &c, st->sync, msg[1], msg[2])) != MPI_SUCCESS)
            break;
        rounds += todo;
        if (ctx->rank != 0)
            continue;
        int invalid = absorb_chunk(ctx, job, &c, 0, st->sync, res, &max_runtime, emit);
        if (invalid < 0) {
            rc = MPI_ERR_NO_MEM;
            msg[0] = 0.0;
            continue;
        }
        if (emit)
            fflush(ctx->out);
        double now = MPI_Wtime();
        int stop_now = decide(ctx, stop, nv, res, rounds, now - t_begin);
        round_time = (now - t_chunk) / todo;
        msg[0] = stop_now ? 0.0 : 1.0;
        msg[3] = 0.0;
        msg[4] = chunk_rounds(stop, check, rounds, round_time, now - t_begin);
        if (st->sync == CT_SYNC_WINDOW) {
            /* Late starts: the window is too short for this job (or the clocks drifted). */
            if (invalid * 10 > c.nreps)
                msg[2] = 2.0 * msg[2] < CT_WINDOW_MAX_S ? 2.0 * msg[2] : CT_WINDOW_MAX_S;
            else if (invalid == 0)
                msg[2] = 0.75 * msg[2] > window0 ? 0.75 * msg[2] : window0; /* noise passed */
            if (invalid * 2 > c.nreps)
                msg[3] = 1.0;
            msg[1] = ct_global_time(&ctx->clock) + msg[2] + 10.0 * ctx->max_rtt + 1e-4;
        }
    }
done:
    chunk_free(&c);
    return rc;
}

/* ------------------------------------------------------------------------------------------- */
/* Jobs */

static void summary_lines(run_ctx *ctx, const ct_job *job, const ct_variant *vars, int nv,
                          const job_result *res)
{
    for (int v = 0; v < nv; v++) {
        fprintf(ctx->out, "{\"type\":\"summary\",\"job\":%d,\"variant\":", job->id);
        ct_out_json_string(ctx->out, vars[v].name);
        fprintf(ctx->out, ",\"nrep\":%ld,\"valid\":%ld,\"stop\":\"%s\",\"rse\":", res->measured[v],
                res->valid[v], ct_stop_state_name(res->state[v]));
        json_number(ctx->out, res->stats[v].rse);
        fputs(",\"cov_mean\":", ctx->out);
        json_number(ctx->out, res->stats[v].cov_mean);
        fputs(",\"cov_median\":", ctx->out);
        json_number(ctx->out, res->stats[v].cov_median);
        fprintf(ctx->out, ",\"nrep_target\":%ld,\"window_s\":", res->stats[v].nrep_target);
        json_number(ctx->out, ctx->st->sync == CT_SYNC_WINDOW ? res->window : NAN);
        fprintf(ctx->out, ",\"resyncs\":%d,\"max_rtt_s\":", res->resyncs);
        json_number(ctx->out, ctx->max_rtt);
        fputs("}\n", ctx->out);
    }
}

static void job_line(run_ctx *ctx, const ct_job *job, const ct_call *call, const ct_variant *vars,
                     int nv)
{
    fprintf(ctx->out, "{\"type\":\"job\",\"job\":%d,\"collective\":", job->id);
    ct_out_json_string(ctx->out, job->collective);
    fprintf(ctx->out, ",\"msg_bytes\":%lld,\"datatype\":", (long long)job->msg_bytes);
    ct_out_json_string(ctx->out, job->datatype);
    fputs(",\"op\":", ctx->out);
    ct_out_json_string(ctx->out, job->op);
    fprintf(ctx->out, ",\"root\":%d,\"count\":%d,\"variants\":[", call->root, call->recvcount);
    for (int v = 0; v < nv; v++) {
        if (v)
            fputc(',', ctx->out);
        ct_out_json_string(ctx->out, vars[v].name);
    }
    fputs("]}\n", ctx->out);
}

static void free_series(job_result *res, int nv)
{
    for (int v = 0; v < nv; v++)
        ct_series_free(&res->series[v]);
}

/* Seed 000: t1 = time until the 1-element default of this collective reached the RSE
 * threshold, measured once per collective per launch unless given (--ref-time). */
static int reference_time(run_ctx *ctx, const ct_job *job, double *t1)
{
    const ct_stop_settings *stop = &ctx->st->stop;
    if (stop->ref_time_s > 0) {
        *t1 = stop->ref_time_s;
        return MPI_SUCCESS;
    }
    for (int i = 0; i < ctx->nrefs; i++)
        if (strcmp(ctx->refs[i].coll, job->collective) == 0) {
            *t1 = ctx->refs[i].t1;
            return MPI_SUCCESS;
        }
    ct_job ref = *job;
    int tsize = 1, rc;
    MPI_Datatype type = MPI_BYTE;
    ct_call call;
    ct_buffers buffers;
    char err[256];
    ct_variant v;
    job_result *res = malloc(sizeof *res);
    if (!res)
        return MPI_ERR_NO_MEM;
    ref.nvariants = 1;
    snprintf(ref.variant_names[0], CT_NAME_LEN, "default");
    /* the smallest message of the job's datatype (p elements for reduce_scatter_block) */
    rc = ct_job_setup(job, ctx->comm, &call, &buffers, err, sizeof err);
    if (rc == MPI_SUCCESS) {
        type = call.recvtype;
        ct_buffers_free(&buffers);
        PMPI_Type_size(type, &tsize);
    }
    ref.msg_bytes = strcmp(job->collective, "reduce_scatter_block") == 0
                        ? (int64_t)tsize * ctx->size : tsize;
    rc = ct_job_setup(&ref, ctx->comm, &call, &buffers, err, sizeof err);
    if (rc != MPI_SUCCESS) {
        free(res);
        return rc;
    }
    ct_buffers_fill(&call, &buffers, ctx->rank);
    resolve_variant(ctx, &ref, &call, "default", &v, err, sizeof err);
    ct_stop_settings rse = *stop;
    rse.methods = CT_STOP_RSE;
    rc = measure(ctx, &ref, &v, 1, &rse, res, 0);
    /* t1 is measured latency, not wall time: nrep = t1 / latency must not count the
     * synchronization between repetitions. If the RSE never dropped below the threshold, the
     * whole measurement is the best bound we have. */
    double t = res->series[0].mean * (double)res->series[0].n;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Bcast(&t, 1, MPI_DOUBLE, 0, ctx->comm);
    if (rc == MPI_SUCCESS && ctx->out) {
        fputs("{\"type\":\"reference\",\"collective\":", ctx->out);
        ct_out_json_string(ctx->out, job->collective);
        fprintf(ctx->out, ",\"msg_bytes\":%lld,\"t1_s\":%.9g,\"nrep\":%ld,\"stop\":\"%s\"}\n",
                (long long)ref.msg_bytes, t, res->measured[0], ct_stop_state_name(res->state[0]));
    }
    free_series(res, 1);
    free(res);
    ct_buffers_free(&buffers);
    if (rc == MPI_SUCCESS && ctx->nrefs < CT_MAX_REFS) {
        snprintf(ctx->refs[ctx->nrefs].coll, CT_NAME_LEN, "%s", job->collective);
        ctx->refs[ctx->nrefs++].t1 = t;
    }
    *t1 = t;
    return rc;
}

static int probe_job(run_ctx *ctx, const ct_job *job, ct_variant *vars, int nv, ct_buffers *b)
{
    uint64_t *all = ctx->rank == 0 ? malloc((size_t)ctx->size * sizeof *all) : NULL;
    if (ctx->rank == 0 && !all)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    for (int v = 0; v < nv && rc == MPI_SUCCESS; v++) {
        ct_buffers_fill(&vars[v].call, b, ctx->rank);
        if ((rc = prepare(ctx, &vars[v])) != MPI_SUCCESS)
            break;
        if ((rc = invoke(ctx, &vars[v])) != MPI_SUCCESS) {
            report_failure(ctx, &vars[v], rc);
            break;
        }
        uint64_t h = ct_buffers_hash(b);
        if ((rc = PMPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, ctx->comm)))
            break;
        if (ctx->rank != 0)
            continue;
        uint64_t combined = UINT64_C(0xcbf29ce484222325);
        for (int r = 0; r < ctx->size; r++)
            combined = (combined ^ all[r]) * UINT64_C(0x100000001b3);
        fprintf(ctx->out, "{\"type\":\"probe\",\"job\":%d,\"variant\":", job->id);
        ct_out_json_string(ctx->out, vars[v].name);
        fprintf(ctx->out, ",\"hash\":\"%016llx\",\"root_hash\":\"%016llx\"}\n",
                (unsigned long long)combined, (unsigned long long)all[0]);
    }
    free(all);
    return rc;
}

static int run_job(run_ctx *ctx, const ct_job *job)
{
    ctx->job = job;
    ct_call call;
    ct_buffers buffers;
    char err[256];
    int rc = ct_job_setup(job, ctx->comm, &call, &buffers, err, sizeof err);
    if (rc != MPI_SUCCESS) {
        /* Same arguments on every rank, same verdict: skip the job everywhere. */
        if (ctx->out) {
            fprintf(ctx->out, "{\"type\":\"job_skip\",\"job\":%d,\"reason\":", job->id);
            ct_out_json_string(ctx->out, err);
            fputs("}\n", ctx->out);
        }
        ct_buffers_free(&buffers);
        return MPI_SUCCESS;
    }
    ct_buffers_fill(&call, &buffers, ctx->rank);
    ct_variant *vars = malloc(CT_MAX_VARIANTS * sizeof *vars);
    job_result *res = malloc(sizeof *res);
    int nv = 0;
    if (!vars || !res) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int i = 0; i < job->nvariants; i++) {
        char why[256];
        if (resolve_variant(ctx, job, &call, job->variant_names[i], &vars[nv], why, sizeof why))
            nv++;
        else
            skip_line(ctx, job, job->variant_names[i], why);
    }
    if (ctx->out)
        job_line(ctx, job, &call, vars, nv);
    if (nv == 0)
        goto out;
    if (ctx->st->probe) {
        rc = probe_job(ctx, job, vars, nv, &buffers);
        goto out;
    }
    ct_stop_settings stop = ctx->st->stop;
    if (stop.methods & CT_STOP_NREP1) {
        if ((rc = reference_time(ctx, job, &stop.ref_time_s)) != MPI_SUCCESS)
            goto out;
    }
    rc = measure(ctx, job, vars, nv, &stop, res, 1);
    if (rc == MPI_SUCCESS && ctx->out)
        summary_lines(ctx, job, vars, nv, res);
    free_series(res, nv);
out:
    if (rc == MPI_SUCCESS)
        rc = prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1});
    if (ctx->out)
        fflush(ctx->out);
    free(vars);
    free(res);
    ct_buffers_free(&buffers);
    return rc;
}

/* ------------------------------------------------------------------------------------------- */
/* Launch metadata */

static void cpu_model(char *model, size_t len)
{
    snprintf(model, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 2;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(model, len, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static int launch_lines(run_ctx *ctx)
{
    char host[MPI_MAX_PROCESSOR_NAME] = {0}, *hosts = NULL;
    int len, rc = MPI_Get_processor_name(host, &len);
    if (rc != MPI_SUCCESS)
        return rc;
    if (ctx->rank == 0 && !(hosts = calloc((size_t)ctx->size, MPI_MAX_PROCESSOR_NAME)))
        return MPI_ERR_NO_MEM;
    rc = PMPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME,
                     MPI_CHAR, 0, ctx->comm);
    if (rc != MPI_SUCCESS || ctx->rank != 0) {
        free(hosts);
        return rc;
    }
    char library[MPI_MAX_LIBRARY_VERSION_STRING], cpu[256];
    int version, subversion;
    MPI_Get_library_version(library, &len);
    MPI_Get_version(&version, &subversion);
    cpu_model(cpu, sizeof cpu);
    const ct_bench_settings *st = ctx->st;
    fprintf(ctx->out, "{\"type\":\"launch\",\"nprocs\":%d,\"mpi_version\":\"%d.%d\",\"library\":",
            ctx->size, version, subversion);
    ct_out_json_string(ctx->out, library);
    fputs(",\"cpu_model\":", ctx->out);
    ct_out_json_string(ctx->out, cpu);
    fprintf(ctx->out, ",\"sync\":\"%s\",\"metric\":\"%s\",\"seed\":%llu,\"wtick\":%.3g,\"hosts\":[",
            ct_sync_name(st->sync), st->metric_makespan ? "makespan" : "max",
            (unsigned long long)st->seed, MPI_Wtick());
    for (int r = 0; r < ctx->size; r++) {
        if (r)
            fputc(',', ctx->out);
        ct_out_json_string(ctx->out, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
    }
    fputs("]}\n", ctx->out);
    free(hosts);
    static const char *const needles[] = {
        "coll_tuned_", "coll_han_", "_INTRA_ALGORITHM", "DEVICE_COLLECTIVES",
        "COLLECTIVE_FALLBACK", "COLL_SELECTION",
        "mpi_yield_when_idle", /* Open MPI: whether waiting ranks gave their core away */
    };
    ct_libalg_dump_cvars(ctx->out, needles, sizeof needles / sizeof needles[0]);
    fflush(ctx->out);
    return MPI_SUCCESS;
}

/* Rank 0 reads the job file and sends it to the others (it need not be on a shared disk). */
static int share_jobs(run_ctx *ctx, ct_job **jobs, int *njobs)
{
    char err[512] = "";
    int n = -1;
    if (ctx->rank == 0 && ct_jobs_read(ctx->st->job_file, jobs, &n, err, sizeof err) != 0)
        fprintf(stderr, "colltune-bench: %s\n", err);
    int rc = PMPI_Bcast(&n, 1, MPI_INT, 0, ctx->comm);
    if (rc != MPI_SUCCESS || n < 0)
        return rc != MPI_SUCCESS ? rc : MPI_ERR_ARG;
    if (ctx->rank != 0 && !(*jobs = malloc((size_t)(n ? n : 1) * sizeof **jobs)))
        return MPI_ERR_NO_MEM;
    *njobs = n;
    return PMPI_Bcast(*jobs, (int)((size_t)n * sizeof **jobs), MPI_BYTE, 0, ctx->comm);
}

static int load_profile(run_ctx *ctx)
{
    if (!ctx->st->profile_file)
        return MPI_SUCCESS;
    char err[512];
    int ok = ct_profile_load(ctx->st->profile_file, &ctx->profile, err, sizeof err) == 0, all;
    if (!ok)
        fprintf(stderr, "colltune-bench: %s\n", err);
    int rc = PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (rc == MPI_SUCCESS && !all)
        rc = MPI_ERR_ARG;
    return rc;
}

int ct_bench_run(const ct_bench_settings *st, MPI_Comm comm)
{
    run_ctx *ctx = calloc(1, sizeof *ctx);
    ct_job *jobs = NULL;
    int njobs = 0, rc;
    if (!ctx)
        return MPI_ERR_NO_MEM;
    ctx->st = st;
    ctx->comm = comm;
    ctx->selected = -1;
    PMPI_Comm_rank(comm, &ctx->rank);
    PMPI_Comm_size(comm, &ctx->size);
    if (ctx->rank == 0) {
        ctx->out = st->out_file ? fopen(st->out_file, "w") : stdout;
        if (!ctx->out)
            fprintf(stderr, "colltune-bench: cannot write %s\n", st->out_file);
    }
    int opened = ctx->rank != 0 || ctx->out != NULL, all_opened;
    rc = PMPI_Allreduce(&opened, &all_opened, 1, MPI_INT, MPI_MIN, comm);
    if (rc == MPI_SUCCESS && !all_opened)
        rc = MPI_ERR_FILE;
    if (rc == MPI_SUCCESS)
        rc = share_jobs(ctx, &jobs, &njobs);
    if (rc == MPI_SUCCESS)
        rc = load_profile(ctx);
    if (rc == MPI_SUCCESS)
        rc = launch_lines(ctx);
    int *order = rc == MPI_SUCCESS ? job_order(st->seed, njobs) : NULL;
    if (rc == MPI_SUCCESS && !order)
        rc = MPI_ERR_NO_MEM;
    for (int j = 0; j < njobs && rc == MPI_SUCCESS; j++)
        rc = run_job(ctx, &jobs[order[j]]);
    free(order);
    if (ctx->out) {
        if (rc == MPI_SUCCESS)
            fprintf(ctx->out, "{\"type\":\"end\",\"jobs\":%d}\n", njobs);
        fflush(ctx->out);
        if (ctx->out != stdout)
            fclose(ctx->out);
    }
    for (int i = 0; i < ctx->nlibalgs; i++)
        ct_libalg_close(&ctx->libalgs[i].alg);
    if (ctx->profile)
        ct_profile_free(ctx->profile);
    free(jobs);
    free(ctx);
    return rc;
}

/* ------------------------------------------------------------------------------------------- */
/* Clock test: the offset estimate against the true offset of the same clock. */

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* mono - MPI_Wtime of this process, from the MPI_Wtime read most tightly bracketed by two
 * monotonic reads: a single pair of reads is off by whatever descheduled the process between
 * them (14 us once with 3 ranks on 2 cores, beyond the test's 2 us allowance). */
static double wtime_origin(void)
{
    double best_gap = INFINITY, origin = 0.0;
    for (int i = 0; i < 16; i++) {
        double before = monotonic_now();
        double w = MPI_Wtime();
        double after = monotonic_now();
        if (after - before < best_gap) {
            best_gap = after - before;
            origin = 0.5 * (before + after) - w;
        }
    }
    return origin;
}

int ct_bench_clocktest(MPI_Comm comm, int pingpongs, int rounds)
{
    int rank, size, rc = MPI_SUCCESS;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    for (int r = 0; r < rounds && rc == MPI_SUCCESS; r++) {
        ct_clock clock;
        if ((rc = ct_clock_sync(comm, pingpongs, &clock)) != MPI_SUCCESS)
            break;
        /* MPI_Wtime's origin differs per process; the monotonic clock is shared on one host,
         * so (mono - wtime) of rank 0 minus ours is the true offset. */
        double mine[3] = {wtime_origin(), clock.offset, clock.rtt}, *all = NULL;
        if (rank == 0 && !(all = malloc((size_t)size * 3 * sizeof *all)))
            return MPI_ERR_NO_MEM;
        rc = PMPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, comm);
        if (rc == MPI_SUCCESS && rank == 0) {
            for (int p = 1; p < size; p++) {
                double truth = all[3 * p] - all[0];
                printf("{\"type\":\"clock\",\"round\":%d,\"rank\":%d,\"estimate\":%.9e,"
                       "\"truth\":%.9e,\"error\":%.9e,\"rtt\":%.9e}\n",
                       r, p, all[3 * p + 1], truth, all[3 * p + 1] - truth, all[3 * p + 2]);
            }
            fflush(stdout);
        }
        free(all);
    }
    return rc;
}

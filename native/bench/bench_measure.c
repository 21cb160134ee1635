/*
 * The repetitions of one job (seed-free description: docs/measurement.md): every round runs each
 * variant once, in an order drawn from a PRNG seeded identically on all ranks; rounds come in
 * chunks of `check_every`, after which rank 0 gathers the timings, writes the records and
 * decides whether to stop. Nothing of this bookkeeping falls inside a timed region.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "ct_driver_record.h"

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


/* Which call failed, on the ranks where it did (the library's own text follows from main). */
void ct_run_report_failure(const run_ctx *ctx, const ct_variant *v, int rc)
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
        if ((rc = ct_run_prepare(ctx, v)) != MPI_SUCCESS)
            break;
        if (sync == CT_SYNC_BARRIER)
            rc = PMPI_Barrier(ctx->comm);
        else if (sync == CT_SYNC_DISSEMINATION)
            rc = ct_dissemination_barrier(ctx->comm);
        else if (sync == CT_SYNC_WINDOW)
            late = ct_wait_until(&ctx->clock, c->target[k]);
        if (rc != MPI_SUCCESS)
            break;
        double t0 = MPI_Wtime();
        rc = ct_run_invoke(ctx, v);
        double t1 = MPI_Wtime();
        if (rc != MPI_SUCCESS) {
            ct_run_report_failure(ctx, v, rc);
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
int ct_run_measure(run_ctx *ctx, const ct_job *job, const ct_variant *vars, int nv,
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

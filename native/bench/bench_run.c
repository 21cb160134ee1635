/*
 * The measurement loop (PGMPITuneLib Algorithm 1, ReproMPI-style raw records; docs/measurement.md).
 *
 * Per job, all variants run in the same launch in rounds: every round runs each variant once,
 * in an order drawn from a PRNG seeded identically on all ranks, so that drift within the launch
 * hits all variants alike. Rounds come in chunks of `check_every`; after a chunk the local
 * timings are reduced to rank 0 (max duration, max end, min start, late flag), rank 0 writes the
 * records, evaluates the stopping rules and broadcasts the decision. Nothing of this bookkeeping
 * falls inside a timed region.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "bench_run.h"
#include "ct_driver_record.h"
#include "ct_layout.h"

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

/* ------------------------------------------------------------------------------------------- */
/* Jobs */

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
        PMPI_Type_size(type, &tsize);
    }
    ct_buffers_free(&buffers);
    ref.msg_bytes = strcmp(job->collective, "reduce_scatter_block") == 0
                        ? (int64_t)tsize * ctx->size : tsize;
    rc = ct_job_setup(&ref, ctx->comm, &call, &buffers, err, sizeof err);
    if (rc != MPI_SUCCESS) {
        ct_buffers_free(&buffers);
        free(res);
        return rc;
    }
    const ct_nbsetup *job_nb = ctx->nb;
    ctx->nb = buffers.nb;
    ct_buffers_fill(&call, &buffers, ctx->rank);
    ct_run_resolve(ctx, &ref, &call, "default", &v, err, sizeof err);
    ct_stop_settings rse = *stop;
    rse.methods = CT_STOP_RSE;
    rc = ct_run_measure(ctx, &ref, &v, 1, &rse, res, 0);
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
    ctx->nb = job_nb;
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
        if ((rc = ct_run_prepare(ctx, &vars[v])) != MPI_SUCCESS)
            break;
        if ((rc = ct_run_invoke(ctx, &vars[v])) != MPI_SUCCESS) {
            ct_run_report_failure(ctx, &vars[v], rc);
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
    ctx->nb = buffers.nb;
    ct_variant *vars = malloc(CT_MAX_VARIANTS * sizeof *vars);
    job_result *res = malloc(sizeof *res);
    int nv = 0;
    if (!vars || !res) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int i = 0; i < job->nvariants; i++) {
        char why[256];
        if (ct_run_resolve(ctx, job, &call, job->variant_names[i], &vars[nv], why, sizeof why))
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
    rc = ct_run_measure(ctx, job, vars, nv, &stop, res, 1);
    if (rc == MPI_SUCCESS && ctx->out)
        summary_lines(ctx, job, vars, nv, res);
    free_series(res, nv);
out:
    if (vars) {
        int released = ct_run_release(vars, nv);
        rc = rc == MPI_SUCCESS ? released : rc;
    }
    if (rc == MPI_SUCCESS)
        rc = ct_run_prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1});
    if (ctx->out)
        fflush(ctx->out);
    free(vars);
    free(res);
    ct_buffers_free(&buffers);
    ctx->nb = NULL;
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
    /* `tuned` decides as the interposer does: per-layout rules by the communicator's layout */
    ct_layout layout;
    if (rc == MPI_SUCCESS && ct_profile_has_layouts(ctx->profile, -1)
        && (rc = ct_comm_layout(ctx->comm, NULL, &layout)) == MPI_SUCCESS
        && ct_layout_uniform(&layout)) {
        ctx->nodes = (int)layout.nodes;
        ctx->ppn = (int)layout.ppn_max;
    }
    return rc;
}

static double realtime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The front end starts the next launch while this one's MPI is ending and holds its ranks here,
 * blocked in the kernel (no polling that would take a core from the ending launch), until that
 * launch has exited: the locked gate file is released then. A rank that finds no such file runs
 * on another host, away from what the gate protects; the barrier after the gate holds it until
 * the ranks here have passed, so no rank measures early. */
static int wait_at_gate(run_ctx *ctx)
{
    const char *gate = ctx->st->gate_file;
    int ok = 1, all, fd = gate ? open(gate, O_RDONLY) : -1;
    if (fd >= 0) {
        while (flock(fd, LOCK_SH) != 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "colltune-bench: cannot wait at the gate %s: %s\n", gate, strerror(errno));
            ok = 0;
            break;
        }
        close(fd);
    }
    int rc = PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
    return rc != MPI_SUCCESS ? rc : all ? MPI_SUCCESS : MPI_ERR_FILE;
}

/* One byte down the front end's FIFO: this launch measures no more, the next may start. No
 * reader (a front end that did not wait) is not an error. */
static void say_measured(const run_ctx *ctx)
{
    if (ctx->rank != 0 || !ctx->st->measured_fifo)
        return;
    int fd = open(ctx->st->measured_fifo, O_WRONLY | O_NONBLOCK);
    if (fd < 0)
        return;
    if (write(fd, "m", 1) != 1)
        fprintf(stderr, "colltune-bench: cannot write %s: %s\n", ctx->st->measured_fifo, strerror(errno));
    close(fd);
}

int ct_bench_run(const ct_bench_settings *st, MPI_Comm comm)
{
    run_ctx *ctx = calloc(1, sizeof *ctx);
    ct_job *jobs = NULL;
    int njobs = 0, rc;
    double measuring_from = 0.0, measuring_until = 0.0;
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
        rc = load_profile(ctx);
    if (rc == MPI_SUCCESS)
        rc = launch_lines(ctx);
    /* The measuring phase: from every rank past the gate to every rank done with the last job. */
    if (rc == MPI_SUCCESS && (rc = wait_at_gate(ctx)) == MPI_SUCCESS && (rc = PMPI_Barrier(comm)) == MPI_SUCCESS)
        measuring_from = realtime_now();
    if (rc == MPI_SUCCESS)
        rc = share_jobs(ctx, &jobs, &njobs);
    int *order = rc == MPI_SUCCESS ? job_order(st->seed, njobs) : NULL;
    if (rc == MPI_SUCCESS && !order)
        rc = MPI_ERR_NO_MEM;
    for (int j = 0; j < njobs && rc == MPI_SUCCESS; j++)
        rc = run_job(ctx, &jobs[order[j]]);
    free(order);
    if (rc == MPI_SUCCESS && (rc = PMPI_Barrier(comm)) == MPI_SUCCESS)
        measuring_until = realtime_now();
    if (ctx->out) {
        if (rc == MPI_SUCCESS)
            fprintf(ctx->out, "{\"type\":\"end\",\"jobs\":%d,\"measuring_from\":%.6f,\"measuring_until\":%.6f}\n",
                    njobs, measuring_from, measuring_until);
        fflush(ctx->out);
        if (ctx->out != stdout)
            fclose(ctx->out);
    }
    if (rc == MPI_SUCCESS)
        say_measured(ctx);
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

/*
 * colltune-bench: measure collective variants (docs/measurement.md).
 *
 *   colltune-bench run JOBFILE [options]     measure (under mpiexec)
 *   colltune-bench stoprule [options]        stopping rule on samples from stdin (no MPI)
 *   colltune-bench clocktest [options]       clock offset estimates vs the truth (one host)
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char usage[] =
    "usage: colltune-bench run JOBFILE [options]\n"
    "       colltune-bench stoprule [stopping options] < samples\n"
    "       colltune-bench clocktest [--pingpongs N] [--rounds N]\n"
    "\n"
    "JOBFILE: one job per line, `#` comments:\n"
    "  <collective> <msg_bytes> <datatype|-> <op|-> <root|-> <variant>[,<variant>...]\n"
    "  variants: default, default#aa, tuned, <mock-up name>, lib:<collective>:<algorithm>\n"
    "\n"
    "options:\n"
    "  --out FILE               records to FILE (default stdout), rank 0 only\n"
    "  --sync barrier|dissemination|window   (default dissemination)\n"
    "  --metric max|makespan    value the stopping rules watch (default max)\n"
    "  --stop LIST              rse,cov_mean,cov_median,nrep1 (all must hold) or fixed\n"
    "  --rse X --cov-mean X --cov-mean-window N --cov-median X --cov-median-window N\n"
    "  --min-reps N --max-reps N --warmup N --check-every N --time-budget SECONDS\n"
    "  --ref-time SECONDS --nrep1-rse X --b1 N --b2 N --k N   (seed 000 rule, --stop nrep1)\n"
    "  --seed N --pingpongs N --profile FILE --probe\n";

static int parse_double(const char *text, double *value)
{
    char *end;
    errno = 0;
    *value = strtod(text, &end);
    return errno || *end || end == text ? -1 : 0;
}

static int parse_int(const char *text, int *value)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < 0 || v > 1000000000L)
        return -1;
    *value = (int)v;
    return 0;
}

/* One option with its value; returns 0, or -1 with a message printed. */
static int apply_option(ct_bench_settings *st, const char *key, const char *val)
{
    ct_stop_settings *s = &st->stop;
    int bad = 0;
    if (!val) {
        fprintf(stderr, "colltune-bench: option --%s needs a value\n", key);
        return -1;
    }
    if (!strcmp(key, "out")) st->out_file = val;
    else if (!strcmp(key, "profile")) st->profile_file = val;
    else if (!strcmp(key, "sync")) bad = ct_sync_parse(val, &st->sync);
    else if (!strcmp(key, "metric")) {
        bad = strcmp(val, "max") && strcmp(val, "makespan");
        st->metric_makespan = !strcmp(val, "makespan");
    }
    else if (!strcmp(key, "stop")) bad = ct_stop_parse_methods(val, &s->methods);
    else if (!strcmp(key, "rse")) bad = parse_double(val, &s->rse_threshold);
    else if (!strcmp(key, "cov-mean")) bad = parse_double(val, &s->cov_mean_threshold);
    else if (!strcmp(key, "cov-mean-window")) bad = parse_int(val, &s->cov_mean_window);
    else if (!strcmp(key, "cov-median")) bad = parse_double(val, &s->cov_median_threshold);
    else if (!strcmp(key, "cov-median-window")) bad = parse_int(val, &s->cov_median_window);
    else if (!strcmp(key, "min-reps")) bad = parse_int(val, &s->min_reps);
    else if (!strcmp(key, "max-reps")) bad = parse_int(val, &s->max_reps) || s->max_reps < 1;
    else if (!strcmp(key, "warmup")) bad = parse_int(val, &s->warmup);
    else if (!strcmp(key, "check-every")) bad = parse_int(val, &s->check_every) || !s->check_every;
    else if (!strcmp(key, "time-budget")) bad = parse_double(val, &s->time_budget_s);
    else if (!strcmp(key, "ref-time")) bad = parse_double(val, &s->ref_time_s);
    else if (!strcmp(key, "nrep1-rse")) bad = parse_double(val, &s->nrep1_rse);
    else if (!strcmp(key, "b1")) bad = parse_int(val, &s->b1);
    else if (!strcmp(key, "b2")) bad = parse_int(val, &s->b2);
    else if (!strcmp(key, "k")) bad = parse_int(val, &s->k);
    else if (!strcmp(key, "pingpongs")) bad = parse_int(val, &st->pingpongs);
    else if (!strcmp(key, "seed")) {
        char *end;
        errno = 0;
        st->seed = strtoull(val, &end, 10);
        bad = errno || *end;
    } else {
        fprintf(stderr, "colltune-bench: unknown option --%s\n%s", key, usage);
        return -1;
    }
    if (bad) {
        fprintf(stderr, "colltune-bench: bad value '%s' for --%s\n", val, key);
        return -1;
    }
    return 0;
}

/* argv[first..] holds positionals and --key value / --key=value / --probe. */
static int parse_args(int argc, char **argv, int first, ct_bench_settings *st, int *rounds)
{
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0) {
            if (st->job_file) {
                fprintf(stderr, "colltune-bench: unexpected argument '%s'\n", arg);
                return -1;
            }
            st->job_file = arg;
            continue;
        }
        char key[64];
        const char *eq = strchr(arg, '='), *val;
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof key) {
            fprintf(stderr, "colltune-bench: unknown option %s\n", arg);
            return -1;
        }
        memcpy(key, arg + 2, len);
        key[len] = '\0';
        if (!strcmp(key, "probe")) {
            st->probe = 1;
            continue;
        }
        if (!strcmp(key, "help")) {
            fputs(usage, stdout);
            exit(0);
        }
        val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!strcmp(key, "rounds")) {
            if (!val || parse_int(val, rounds)) {
                fprintf(stderr, "colltune-bench: bad value for --rounds\n");
                return -1;
            }
            continue;
        }
        if (apply_option(st, key, val) != 0)
            return -1;
    }
    return 0;
}

static void print_stat(const char *name, double value)
{
    if (isnan(value))
        printf(",\"%s\":null", name);
    else
        printf(",\"%s\":%.17g", name, value);
}

/* Feed samples from stdin one by one, check after every `check_every` samples like the driver,
 * print where it stopped and the statistics there (JSON line). No MPI. */
static int stoprule(const ct_bench_settings *st)
{
    ct_series s;
    ct_stop_stats stats = {0};
    ct_stop_state state = CT_STOP_RUNNING;
    double x;
    long n = 0;
    int check = st->stop.check_every;
    ct_series_init(&s);
    while (state == CT_STOP_RUNNING && scanf("%lf", &x) == 1) {
        if (ct_series_push(&s, x) != MPI_SUCCESS)
            return 1;
        n++;
        if (n % check != 0 && n < st->stop.max_reps)
            continue;
        if (ct_stop_satisfied(&st->stop, &s, &stats))
            state = CT_STOP_CONVERGED;
        else if (n >= st->stop.max_reps)
            state = CT_STOP_MAX_REPS;
    }
    if (state == CT_STOP_RUNNING)
        ct_stop_satisfied(&st->stop, &s, &stats);
    printf("{\"n\":%ld,\"state\":\"%s\"", n, ct_stop_state_name(state));
    print_stat("rse", stats.rse);
    print_stat("cov_mean", stats.cov_mean);
    print_stat("cov_median", stats.cov_median);
    printf(",\"nrep_target\":%ld}\n", stats.nrep_target);
    ct_series_free(&s);
    return 0;
}

static void defaults(ct_bench_settings *st)
{
    memset(st, 0, sizeof *st);
    ct_stop_defaults(&st->stop);
    st->sync = CT_SYNC_DISSEMINATION;
    st->seed = 12345;
    st->pingpongs = 20;
}

int main(int argc, char **argv)
{
    ct_bench_settings st;
    int rounds = 3, rc;
    defaults(&st);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "run") && strcmp(mode, "stoprule") && strcmp(mode, "clocktest")) {
        fprintf(stderr, "colltune-bench: unknown mode '%s'\n%s", mode, usage);
        return 2;
    }
    if (parse_args(argc, argv, 2, &st, &rounds) != 0)
        return 2;
    if (!strcmp(mode, "stoprule"))
        return stoprule(&st);
    if (!strcmp(mode, "run") && !st.job_file) {
        fprintf(stderr, "colltune-bench: run needs a JOBFILE\n%s", usage);
        return 2;
    }
    int provided;
    if ((rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided)) != MPI_SUCCESS)
        return 1;
    /* MPI_T may be unavailable: library variants then report that they cannot be chosen. */
    int have_t = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    /* Errors come back as codes so that we can say which job failed before aborting. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!strcmp(mode, "clocktest"))
        rc = ct_bench_clocktest(MPI_COMM_WORLD, st.pingpongs, rounds);
    else
        rc = ct_bench_run(&st, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "colltune-bench: failed: %s\n", text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Open MPI crashes on MPI_T_finalize after MPI_Finalize. */
    if (have_t)
        MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

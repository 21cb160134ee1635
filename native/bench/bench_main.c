/*
 * colltune-bench: measure collective variants (docs/measurement.md).
 *
 *   colltune-bench run JOBFILE [options]     measure (under mpiexec)
 *   colltune-bench stoprule [options]        stopping rule on samples from stdin (no MPI)
 *   colltune-bench clocktest [options]       clock offset estimates vs the truth (one host)
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "ct_driver_options.h"

static const char usage[] =
    "usage: colltune-bench run JOBFILE [options]\n"
    "       colltune-bench stoprule [stopping options] < samples\n"
    "       colltune-bench clocktest [--pingpongs N] [--rounds N]\n"
    "\n"
    "JOBFILE: one job per line, `#` comments:\n"
    "  <collective> <msg_bytes> <datatype|-> <op|-> <root|-> <variant>[,<variant>...]\n"
    "  variants: default, default#aa, default#nonblocking, default#persistent, tuned,\n"
    "            <mock-up name>, lib:<collective>:<algorithm>[#nonblocking|#persistent]\n"
    "\n"
    "options (native/spec/driver.toml; also --probe, and --rounds N for clocktest):\n";

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

static const ct_driver_option *find_option(const char *name)
{
    for (size_t i = 0; i < CT_NUM_DRIVER_OPTIONS; i++)
        if (!strcmp(ct_driver_options[i].name, name))
            return &ct_driver_options[i];
    return NULL;
}

static int below_bound(const ct_driver_option *opt, double value)
{
    return opt->bounded && (opt->open ? value <= opt->bound : value < opt->bound);
}

/* Parse `val` into the member the table names; 0, or -1 for a bad value. */
static int parse_value(const ct_driver_option *opt, const char *val, ct_bench_settings *st)
{
    char *member = (char *)st + opt->offset;
    switch (opt->kind) {
    case CT_OPT_PATH:
        *(const char **)member = val;
        return 0;
    case CT_OPT_SYNC:
        return ct_sync_parse(val, (ct_sync_method *)member);
    case CT_OPT_METRIC:
        *(int *)member = !strcmp(val, "makespan");
        return strcmp(val, "max") && strcmp(val, "makespan") ? -1 : 0;
    case CT_OPT_METHODS:
        return ct_stop_parse_methods(val, (unsigned *)member);
    case CT_OPT_U64: {
        char *end;
        errno = 0;
        *(uint64_t *)member = strtoull(val, &end, 10);
        return errno || *end || end == val ? -1 : 0;
    }
    case CT_OPT_INT:
        return parse_int(val, (int *)member) || below_bound(opt, *(int *)member) ? -1 : 0;
    case CT_OPT_DOUBLE:
        return parse_double(val, (double *)member) || below_bound(opt, *(double *)member) ? -1 : 0;
    }
    return -1;
}

/* One option with its value (native/spec/driver.toml); returns 0, or -1 with a message printed. */
static int apply_option(ct_bench_settings *st, const char *key, const char *val)
{
    const ct_driver_option *opt = find_option(key);
    if (!opt) {
        fprintf(stderr, "colltune-bench: unknown option --%s\n%s%s", key, usage, ct_driver_usage);
        return -1;
    }
    if (!val) {
        fprintf(stderr, "colltune-bench: option --%s needs a value\n", key);
        return -1;
    }
    if (parse_value(opt, val, st) != 0) {
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
            fputs(ct_driver_usage, stdout);
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

/* The launcher's own idea of the job, when it says: tells singletons (a launcher without the
 * library's process manager) from a wrong -n. */
static const char *launcher_tasks(const char **name)
{
    static const char *const vars[] = {"SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            *name = vars[i];
            return v;
        }
    }
    return NULL;
}

/* Before anything is measured or written: a world of another size than asked would record
 * numbers of the wrong collective. Rank 0 of each world says so on stderr (the front end
 * parses this line) and nothing is written to --out. */
static int world_confirmed(const ct_bench_settings *st)
{
    int size, rank, len;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (st->expect_procs <= 0 || size == st->expect_procs)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        char host[MPI_MAX_PROCESSOR_NAME] = "?";
        const char *name = NULL, *tasks = launcher_tasks(&name);
        MPI_Get_processor_name(host, &len);
        fprintf(stderr, "colltune-bench: world size %d, expected %d (host %s", size, st->expect_procs,
                host);
        if (tasks)
            fprintf(stderr, ", launcher %s=%s", name, tasks);
        fputs(")\n", stderr);
    }
    return 0;
}

/* Open MPI 5's PMIx client reaches its launcher through a loopback TCP connection left with Nagle's
 * algorithm on, and MPI_Finalize sends it two small messages in a row: the second waits for the
 * launcher's delayed ACK of the first, ~40 ms of every launch's end (issue 36, session 12: strace,
 * and MPI_Finalize 47-68 ms -> 2-20 ms at 4 ranks with TCP_NODELAY). Called once the measuring is
 * over, so no measured repetition sees it; every TCP socket of the process gets TCP_NODELAY. */
static void ct_tcp_nodelay_all(void)
{
    long last = sysconf(_SC_OPEN_MAX);
    if (last < 0 || last > 4096)
        last = 4096;
    for (int fd = 0; fd < last; fd++) {
        int type = 0, one = 1;
        socklen_t len = sizeof type;
        struct sockaddr_storage addr;
        socklen_t alen = sizeof addr;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
            continue;
        if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0
            || (addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
            continue;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
}

static void defaults(ct_bench_settings *st)
{
    memset(st, 0, sizeof *st);
    ct_driver_defaults(st);
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
    if (!strcmp(mode, "run") && !world_confirmed(&st)) {
        if (have_t)
            MPI_T_finalize();
        MPI_Finalize();
        return 3;
    }
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
    ct_tcp_nodelay_all();
    MPI_Finalize();
    return 0;
}

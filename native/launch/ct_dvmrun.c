/* ct_dvmrun: start one MPI job of fresh processes inside a running PRRTE DVM and wait for it.
 *
 *     ct_dvmrun --dvm URI -n NPROCS [-x KEY=VALUE]... -- PROGRAM [ARGS...]
 *
 * What `mpirun -n NPROCS --oversubscribe --bind-to none -x KEY=VALUE PROGRAM` does, without
 * starting PRRTE's daemon every launch: colltune keeps one DVM (`prte`) for a check and starts
 * each launch through this small PMIx tool (issue 36: a check is ~40 launches of 4 ranks; the
 * launcher's own start is part of every gap between two launches' measuring). Open MPI 5.0's
 * `prterun --dvm` would do the same but segfaults on an existing DVM (prrte issue #2364) and the
 * wheel ships no `prun`, so colltune carries its own.
 *
 * Every launch is a new job: new rank processes, their own MPI_Init and MPI_Finalize; only the
 * daemon that forks them is kept. The ranks' environment is this process's environment plus the
 * -x settings (as mpirun -x). Their stdout and stderr are forwarded to ours.
 *
 * Exit status: 0 when every rank exited 0; the job's exit code (or 1) when one failed; 97 when
 * the DVM cannot be reached or refuses the job (nothing ran: the caller may fall back to
 * mpirun); 128 + N after signal N (SIGTERM, SIGINT, SIGHUP), which also kills the job: a
 * launcher stopped by colltune (or by its parent's death) must not leave ranks running.
 *
 * Built by colltune (mpi/dvm.py) with the system's PMIx headers against the PMIx library next to
 * the DVM's `prte`; PMIx's tool interface and the structures used here are part of its stable ABI.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <pmix_tool.h>

#define CT_UNREACHABLE 97
#define CT_ENDED_MAX 256
#define CT_KILL_WAIT_MS 5000

extern char **environ;

/* The DVM replays the end of every earlier job to a new tool: keep the ended namespaces and
 * pick ours once PMIx_Spawn has named it. */
static pthread_mutex_t ct_mu = PTHREAD_MUTEX_INITIALIZER;
static pmix_nspace_t ct_ended[CT_ENDED_MAX];
static int ct_ended_code[CT_ENDED_MAX];
static int ct_nended;
static volatile int ct_lost;  /* the DVM went away (stopped, or died) */
static int ct_wake[2] = {-1, -1};

static int ct_exit_code_of(const pmix_info_t info[], size_t ninfo)
{
    int term = 0, code = -1;
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_JOB_TERM_STATUS))
            term = info[i].value.data.status;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE))
            code = info[i].value.data.integer;
    }
    if (term == PMIX_SUCCESS && code <= 0)
        return 0;
    return code > 0 ? code : 1;
}

static void ct_on_job_end(size_t id, pmix_status_t status, const pmix_proc_t *source, pmix_info_t info[],
                          size_t ninfo, pmix_info_t *results, size_t nresults,
                          pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    const char *nspace = NULL;
    (void)id; (void)status; (void)source; (void)results; (void)nresults;
    for (size_t i = 0; i < ninfo; i++)
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.data.proc != NULL)
            nspace = info[i].value.data.proc->nspace;
    if (nspace != NULL) {
        pthread_mutex_lock(&ct_mu);
        int slot = ct_nended < CT_ENDED_MAX ? ct_nended++ : (ct_nended - 1);
        PMIX_LOAD_NSPACE(ct_ended[slot], nspace);
        ct_ended_code[slot] = ct_exit_code_of(info, ninfo);
        pthread_mutex_unlock(&ct_mu);
        ssize_t ignored = write(ct_wake[1], "e", 1);
        (void)ignored;
    }
    if (cbfunc != NULL)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

static void ct_on_lost(size_t id, pmix_status_t status, const pmix_proc_t *source, pmix_info_t info[],
                       size_t ninfo, pmix_info_t *results, size_t nresults,
                       pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    (void)id; (void)status; (void)source; (void)info; (void)ninfo; (void)results; (void)nresults;
    ct_lost = 1;
    ssize_t ignored = write(ct_wake[1], "l", 1);
    (void)ignored;
    if (cbfunc != NULL)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

/* The exit code of job `nspace` if it has ended, else -1. */
static int ct_ended_job(const pmix_nspace_t nspace)
{
    int found = -1;
    pthread_mutex_lock(&ct_mu);
    for (int i = 0; i < ct_nended; i++)
        if (PMIX_CHECK_NSPACE(ct_ended[i], nspace))
            found = ct_ended_code[i];
    pthread_mutex_unlock(&ct_mu);
    return found;
}

static int ct_usage(void)
{
    fprintf(stderr, "usage: ct_dvmrun --dvm URI -n NPROCS [-x KEY=VALUE]... -- PROGRAM [ARGS...]\n");
    return 2;
}

/* The -x settings, then environ: getenv() finds the first of equal names, so the settings win. */
static char **ct_rank_env(char **settings, int nsettings)
{
    int n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc((size_t)(n + nsettings + 1), sizeof(char *));
    if (env == NULL)
        return NULL;
    for (int i = 0; i < nsettings; i++)
        env[i] = settings[i];
    for (int i = 0; i < n; i++)
        env[nsettings + i] = environ[i];
    return env;
}

static int ct_spawn(char **argv, int nprocs, char **env, pmix_nspace_t nspace)
{
    static char cwd[4096];
    bool yes = true;
    pmix_app_t app;
    pmix_info_t info[5];

    PMIX_APP_CONSTRUCT(&app);
    app.cmd = argv[0];
    app.argv = argv;
    app.env = env;
    app.cwd = getcwd(cwd, sizeof cwd);
    app.maxprocs = nprocs;
    PMIX_INFO_LOAD(&info[0], PMIX_MAPBY, "slot:OVERSUBSCRIBE", PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_BINDTO, "none", PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_NOTIFY_COMPLETION, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[3], PMIX_FWD_STDERR, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[4], PMIX_PERSONALITY, "ompi", PMIX_STRING);
    pmix_status_t rc = PMIx_Spawn(info, 5, &app, 1, nspace);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "ct_dvmrun: the DVM refused the job: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* Stop the job after a signal, and wait (bounded) for its end. */
static void ct_kill_job(const pmix_nspace_t nspace, int wake_fd)
{
    pmix_proc_t target;
    pmix_info_t directive;
    bool yes = true;

    PMIX_LOAD_PROCID(&target, nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&directive, PMIX_JOB_CTRL_KILL, &yes, PMIX_BOOL);
    (void)PMIx_Job_control(&target, 1, &directive, 1, NULL, NULL);
    for (int waited = 0; waited < CT_KILL_WAIT_MS && ct_ended_job(nspace) < 0; waited += 100) {
        struct pollfd p = {.fd = wake_fd, .events = POLLIN};
        char buf[64];
        if (poll(&p, 1, 100) > 0) {
            ssize_t ignored = read(wake_fd, buf, sizeof buf);
            (void)ignored;
        }
    }
}

/* Wait for the job's end or a stopping signal: the job's exit code, or 128 + the signal. */
static int ct_wait(const pmix_nspace_t nspace, int sig_fd)
{
    for (;;) {
        int code = ct_ended_job(nspace);
        if (code >= 0)
            return code;
        if (ct_lost) {
            fprintf(stderr, "ct_dvmrun: the DVM ended while the job ran\n");
            return 1;
        }
        struct pollfd p[2] = {{.fd = ct_wake[0], .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return 1;
        if (p[0].revents & POLLIN) {
            char buf[64];
            ssize_t ignored = read(ct_wake[0], buf, sizeof buf);
            (void)ignored;
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
                ct_kill_job(nspace, ct_wake[0]);
                return 128 + (int)si.ssi_signo;
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 7 || strcmp(argv[1], "--dvm") != 0 || strcmp(argv[3], "-n") != 0)
        return ct_usage();
    const char *uri = argv[2];
    int nprocs = atoi(argv[4]);
    char **settings = calloc((size_t)argc, sizeof(char *));
    if (settings == NULL)
        return CT_UNREACHABLE;
    int nsettings = 0, i = 5;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-x") != 0 || i + 1 >= argc || strchr(argv[i + 1], '=') == NULL)
            return ct_usage();
        settings[nsettings++] = argv[++i];
    }
    if (nprocs <= 0 || i + 1 >= argc)
        return ct_usage();

    /* Signals are read from a signalfd by the main thread; blocked before PMIx starts its
     * threads, so none of them takes one. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    int sig_fd = signalfd(-1, &stop, SFD_CLOEXEC);
    if (sig_fd < 0 || pipe(ct_wake) != 0)
        return CT_UNREACHABLE;

    pmix_proc_t me;
    pmix_info_t server;
    PMIX_INFO_LOAD(&server, PMIX_SERVER_URI, uri, PMIX_STRING);
    pmix_status_t rc = PMIx_tool_init(&me, &server, 1);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "ct_dvmrun: cannot reach the DVM at %s: %s\n", uri, PMIx_Error_string(rc));
        return CT_UNREACHABLE;
    }
    pmix_status_t code = PMIX_EVENT_JOB_END;
    PMIx_Register_event_handler(&code, 1, NULL, 0, ct_on_job_end, NULL, NULL);
    pmix_status_t lost[2] = {PMIX_ERR_LOST_CONNECTION, PMIX_ERR_UNREACH};
    PMIx_Register_event_handler(lost, 2, NULL, 0, ct_on_lost, NULL, NULL);

    char **env = ct_rank_env(settings, nsettings);
    pmix_nspace_t nspace;
    int status = CT_UNREACHABLE;
    if (env != NULL && ct_spawn(&argv[i + 1], nprocs, env, nspace) == 0)
        status = ct_wait(nspace, sig_fd);
    PMIx_tool_finalize();
    return status;
}

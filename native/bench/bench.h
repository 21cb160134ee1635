/*
 * colltune-bench: the measurement driver's internal declarations (docs/measurement.md).
 *
 * Layout: bench_stop.c (stopping rules, no MPI), bench_sync.c (clocks, barriers, windows),
 * bench_libalg.c (library algorithms through MPI_T), bench_jobs.c (job file, buffers, calls),
 * bench_out.c (records), bench_run.c (the measurement loop), bench_main.c (command line).
 */
#ifndef CT_BENCH_H
#define CT_BENCH_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "colltune.h"

/* ---------------------------------------------------------------------------------------------
 * Stopping rules (PGMPI section 4.2, PGMPITuneLib section 4.2). Pure C: tested without MPI
 * through `colltune-bench stoprule`. */

enum ct_stop_method_bits {
    CT_STOP_RSE = 1u,        /* relative standard error of the mean below a threshold */
    CT_STOP_COV_MEAN = 2u,   /* COV of the last w running means below a threshold */
    CT_STOP_COV_MEDIAN = 4u, /* COV of the last w running medians below a threshold */
    CT_STOP_NREP1 = 8u       /* PGMPITuneLib: measure at least the 1-byte reference time */
};

typedef struct ct_stop_settings {
    unsigned methods;          /* OR of ct_stop_method_bits; 0 = fixed: run max_reps */
    double rse_threshold;
    double cov_mean_threshold;
    int cov_mean_window;
    double cov_median_threshold;
    int cov_median_window;
    int min_reps;              /* valid measured (non warm-up) repetitions before any stop */
    int max_reps;              /* measured repetitions (valid or not) per variant */
    int warmup;                /* warm-up repetitions per variant, recorded and flagged */
    int check_every;           /* rounds between two stopping checks */
    double time_budget_s;      /* per job, all variants together; <= 0: none */
    /* PGMPITuneLib's rule: t1 = time the 1-byte job needed to reach rse_threshold; other sizes run
     * a pilot of b1 (+ b2 if the pilot's RSE exceeds nrep1_rse) and then
     * nrep = max(ceil(t1 / min latency), k). ref_time_s <= 0: the driver measures t1. */
    double ref_time_s;
    double nrep1_rse;
    int b1, b2, k;
} ct_stop_settings;

typedef enum ct_stop_state {
    CT_STOP_RUNNING = 0,
    CT_STOP_CONVERGED,
    CT_STOP_MAX_REPS,
    CT_STOP_TIME_BUDGET
} ct_stop_state;

const char *ct_stop_state_name(ct_stop_state state);

/* The valid measurements of one variant in one job, kept so that each stopping statistic is
 * O(window) per check (running means and medians are recorded as samples arrive). */
typedef struct ct_series {
    size_t n, cap;
    double *sorted;        /* samples in ascending order */
    double *running_mean;  /* mean of the first i+1 samples */
    double *running_median;
    double mean, m2;       /* Welford */
    double min;
    long nrep_target;      /* PGMPITuneLib rule: 0 until the pilot decided it */
} ct_series;

typedef struct ct_stop_stats {
    double rse, cov_mean, cov_median; /* NaN where not computable yet */
    long nrep_target;
} ct_stop_stats;

void ct_series_init(ct_series *series);
void ct_series_free(ct_series *series);
int ct_series_push(ct_series *series, double value); /* MPI_ERR_NO_MEM on allocation failure */

/* Does `series` satisfy every selected rule? Fills `stats` (also when not satisfied). */
int ct_stop_satisfied(const ct_stop_settings *settings, ct_series *series,
                      ct_stop_stats *stats);

/* Parse a comma list "rse,cov_mean,cov_median,nrep1,fixed" into ct_stop_method_bits.
 * Returns 0, or -1 for an unknown name. */
int ct_stop_parse_methods(const char *text, unsigned *methods);


/* ---------------------------------------------------------------------------------------------
 * Clocks and synchronization. */

/* CT_SYNC_NONE: repetitions back to back, each rank starting when its previous one returned, as
 * an application's loop of dependent calls does (a pattern's cost in a loop, advise --measure). */
typedef enum ct_sync_method {
    CT_SYNC_BARRIER = 0, CT_SYNC_DISSEMINATION, CT_SYNC_WINDOW, CT_SYNC_NONE
} ct_sync_method;

const char *ct_sync_name(ct_sync_method method);
int ct_sync_parse(const char *text, ct_sync_method *method);

/* Global time = MPI_Wtime() + offset; the reference is rank 0 of the communicator. */
typedef struct ct_clock {
    double offset;   /* estimated: rank 0's clock minus ours */
    double rtt;      /* round trip of the best ping-pong: |error| <= rtt / 2 */
} ct_clock;

/* Estimate every rank's offset against rank 0 with `pingpongs` exchanges each (min-RTT
 * sample). Collective. Rank 0 gets offset 0, rtt 0. */
int ct_clock_sync(MPI_Comm comm, int pingpongs, ct_clock *clock);

static inline double ct_global_time(const ct_clock *clock) { return MPI_Wtime() + clock->offset; }

/* A barrier of ceil(log2 p) rounds of zero-byte PMPI_Sendrecv: every process leaves within
 * one message latency of the last arrival (PGMPITuneLib, Algorithm 1). */
int ct_dissemination_barrier(MPI_Comm comm);

/* Busy-wait until global time `target`; returns 1 if we were already late on arrival. */
int ct_wait_until(const ct_clock *clock, double target);

/* ---------------------------------------------------------------------------------------------
 * Library algorithms as variants (`lib:<collective>:<algorithm>`), chosen through MPI_T. */

#include "ct_libalg.h"

/* Environment records: every control variable whose name contains one of `needles`. */
int ct_libalg_dump_cvars(FILE *out, const char *const *needles, size_t count);

/* ---------------------------------------------------------------------------------------------
 * Jobs: what to measure. */

#define CT_MAX_VARIANTS 64
#define CT_NAME_LEN 96

typedef enum ct_variant_kind {
    CT_VK_DEFAULT = 0,  /* the library's collective (PMPI) */
    CT_VK_AA,           /* `default#aa`: the default again, under another name */
    CT_VK_MOCKUP,       /* a mock-up from the catalog */
    CT_VK_LIBRARY,      /* lib:<coll>:<alg>; lib:<coll>:<alg>#<form> is of its form's kind */
    CT_VK_TUNED,        /* what the interposer would do with --profile */
    CT_VK_NONBLOCKING,  /* `default#nonblocking`: PMPI_I<coll> then PMPI_Wait */
    CT_VK_PERSISTENT    /* `default#persistent`: PMPI_Start then PMPI_Wait of one <coll>_init */
} ct_variant_kind;

/* A neighborhood job's communicators and arrays (bench_neighbor.c). */
typedef struct ct_nbsetup ct_nbsetup;

typedef struct ct_variant {
    char name[CT_NAME_LEN];
    ct_variant_kind kind;
    int index;            /* catalog variant index for mock-ups */
    int libalg;           /* index into the run's library algorithms, -1 if none */
    int applicable;       /* colltune_reason */
    ct_call call;         /* the call this variant makes (communicator may differ) */
    MPI_Request request;  /* CT_VK_PERSISTENT: initialized once per job, freed after it */
    const ct_nbsetup *nb; /* a neighborhood job's: run by ct_neighbor_invoke, else NULL */
    int nb_call;          /* which call of that job (bench_neighbor.c) */
} ct_variant;

typedef struct ct_job {
    int id;               /* line order in the job file, stable across launches */
    char collective[CT_NAME_LEN];
    int64_t msg_bytes;
    char datatype[32];
    char op[16];
    int root;
    int nvariants;
    char variant_names[CT_MAX_VARIANTS][CT_NAME_LEN];
} ct_job;

/* Parse a job file: one job per line, `#` comments:
 *   <collective> <msg_bytes> <datatype|-> <op|-> <root|-> <variant>[,<variant>...]
 * Returns 0, or -1 with "file:line: reason" in err. */
int ct_jobs_read(const char *path, ct_job **jobs, int *njobs, char *err, size_t errlen);

/* Buffers and the call of a job on `comm`: counts derived from msg_bytes as in
 * collectives.toml's `bytes`. Returns MPI_SUCCESS, or an error with a reason in err (e.g. a
 * size that the datatype does not divide). */
typedef struct ct_buffers {
    void *send, *recv;
    int *recvcounts;
    int *arrays;                 /* the v/w forms' counts, displacements (one allocation) */
    MPI_Datatype *types;         /* Alltoallw's send and receive datatypes */
    size_t send_bytes, recv_bytes;
    ct_nbsetup *nb;              /* a neighborhood job's topologies, NULL for the others */
} ct_buffers;

int ct_job_setup(const ct_job *job, MPI_Comm comm, ct_call *call, ct_buffers *buffers,
                 char *err, size_t errlen);
void ct_buffers_free(ct_buffers *buffers);
/* Deterministic contents whose reduction results depend on the order of operations. */
void ct_buffers_fill(const ct_call *call, ct_buffers *buffers, int rank);
uint64_t ct_buffers_hash(const ct_buffers *buffers);

/* ---------------------------------------------------------------------------------------------
 * Output: rank 0 writes JSON lines (metadata) and `R,` CSV lines (repetitions). */

void ct_out_json_string(FILE *out, const char *text);

/* ---------------------------------------------------------------------------------------------
 * The run. */

typedef struct ct_profile ct_profile;

typedef struct ct_bench_settings {
    const char *job_file;
    const char *out_file;       /* NULL: stdout */
    const char *profile_file;   /* for the `tuned` variant */
    ct_sync_method sync;
    int metric_makespan;        /* stopping on the makespan instead of the max local duration */
    ct_stop_settings stop;
    uint64_t seed;
    int pingpongs;
    int expect_procs;           /* the world size the launcher was asked for; 0: unchecked */
    const char *gate_file;      /* waited for before measuring (the launch before still ending) */
    const char *measured_fifo;  /* told when the measuring is over, so the next launch may start */
    int probe;                  /* one call per variant, print a hash of the result */
} ct_bench_settings;

int ct_bench_run(const ct_bench_settings *settings, MPI_Comm comm);
int ct_bench_clocktest(MPI_Comm comm, int pingpongs, int rounds);

/* A tiny deterministic PRNG (splitmix64) for the shared randomized order. */
static inline uint64_t ct_rand_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#endif /* CT_BENCH_H */

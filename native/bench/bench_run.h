/*
 * What the measurement loop's files share (private to native/bench): bench_run.c runs jobs and
 * launches, bench_variant.c resolves and runs one variant, bench_measure.c repeats the variants
 * of a job in rounds until the stopping rules say so.
 */
#ifndef CT_BENCH_RUN_H
#define CT_BENCH_RUN_H

#include "bench.h"
#include "ct_profile.h"

#define CT_MAX_LIBALGS 256   /* MPICH lists 71 algorithms of the nonblocking forms alone */
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
    int nodes, ppn;          /* the communicator's uniform layout for `tuned` (0 0: none) */
    libalg_slot libalgs[CT_MAX_LIBALGS];
    int nlibalgs;
    int selected;            /* library algorithm currently selected (MPICH), -1 none */
    struct { char coll[CT_NAME_LEN]; double t1; } refs[CT_MAX_REFS];
    int nrefs;
    const ct_job *job;       /* the job being measured, for error messages */
    const ct_nbsetup *nb;    /* its topologies where it is a neighborhood collective's */
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

/* bench_variant.c: how to run the variant `name` of a job for `call`, or why it cannot run
 * here (returns 0 and fills `why`); select a variant's library algorithm (or none) before
 * running it; run it. */
int ct_run_resolve(run_ctx *ctx, const ct_job *job, const ct_call *call, const char *name,
                   ct_variant *v, char *why, size_t whylen);
int ct_run_prepare(run_ctx *ctx, const ct_variant *v);
int ct_run_invoke(const run_ctx *ctx, const ct_variant *v);
/* Free what resolving the variants allocated (persistent requests); MPI_SUCCESS or the first
 * error. */
int ct_run_release(ct_variant *vars, int nv);

/* bench_measure.c: say on stderr which call failed; measure the job's variants (records written
 * by rank 0 when `emit`). */
void ct_run_report_failure(const run_ctx *ctx, const ct_variant *v, int rc);
int ct_run_measure(run_ctx *ctx, const ct_job *job, const ct_variant *vars, int nv,
                   const ct_stop_settings *stop, job_result *res, int emit);

/* bench_neighbor.c: the neighborhood collectives' jobs. Their row (0..4), -1 for the other
 * collectives; their buffers, topologies and call (call->coll -1); a variant of theirs (1),
 * not one (0, `why` says so), or a name they leave to the library variants (-1); its call. */
int ct_neighbor_row(const char *collective);
int ct_neighbor_setup(int row, MPI_Comm comm, int64_t count, MPI_Datatype type, ct_buffers *b,
                      ct_call *call, char *err, size_t errlen);
void ct_neighbor_free(ct_nbsetup *s);
int ct_neighbor_resolve(const ct_nbsetup *s, const char *name, ct_variant *v, char *why,
                        size_t whylen);
int ct_neighbor_invoke(const ct_variant *v);
/* A library algorithm of the row's nonblocking form: MPI_Ineighbor_<coll> + MPI_Wait on the
 * torus with the algorithm set (lib:neighbor_<coll>:<alg>#nonblocking). */
void ct_neighbor_started(ct_variant *v);

#endif /* CT_BENCH_RUN_H */

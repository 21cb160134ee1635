/*
 * Forcing one of the library's own collective algorithms through MPI_T control variables, for
 * the measurement driver's `lib:` variants and the selftest's proof of them:
 *  - MPICH: MPIR_CVAR_<COLL>_INTRA_ALGORITHM (MPIR_CVAR_I<COLL>_INTRA_ALGORITHM for the
 *    nonblocking and persistent forms) is read on every call, so it is written before
 *    each repetition of the variant (and MPIR_CVAR_DEVICE_COLLECTIVES set to `none`, or device
 *    collectives override the choice, and MPIR_CVAR_COLLECTIVE_FALLBACK to `error`, so that an
 *    algorithm unusable for a call fails instead of being silently replaced), and the library's
 *    values restored for other variants.
 *  - Open MPI: coll_tuned_<coll>_algorithm is copied into a communicator when it is created, so
 *    the variant gets its own communicator made while the value is set (core/mpit.c, with
 *    dynamic rules on and coll/han out of the way).
 *  - Open MPI's nonblocking and persistent forms (coll/libnbc, the only component serving them
 *    on one node): coll_libnbc_i<coll>_algorithm is a plain global that libnbc reads when it
 *    builds each call's schedule (MPI_I<coll>, MPI_<Coll>_init), so it is written before each
 *    call as MPICH's variables are; no communicator of its own.
 * Intel MPI accepts MPI_T writes without effect: there the front end starts one launch per
 * algorithm with I_MPI_ADJUST_<COLL>=<id> (I_MPI_ADJUST_I<COLL> for the nonblocking form), and
 * the variant is the library call of that launch.
 * SimGrid SMPI has no MPI_T at all (include/ct_mpit_absent.h) and reads its algorithm once, when
 * the simulation starts (`--cfg=smpi/<coll>:<name>` on the smpirun line): the front end starts
 * one launch per algorithm too, and tells the ranks which one through COLLTUNE_SMPI_<COLL>
 * (they cannot read SimGrid's string settings: xbt/config.h has getters for numbers only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_libalg.h"
#include "ct_mpit.h"

/* `started`: the variable of the nonblocking form (MPI_I<coll>), which the persistent one
 * shares, instead of the blocking call's. */
static int open_mpich(const char *coll, const char *algorithm, int started, ct_libalg *alg,
                      char *err, size_t errlen)
{
    char ucoll[64], name[160];
    int cvar, index;
    ct_mpit_upper(ucoll, coll, sizeof ucoll);
    snprintf(name, sizeof name, "MPIR_CVAR_%s%s_INTRA_ALGORITHM", started ? "I" : "", ucoll);
    if (ct_mpit_find(name, &cvar) != 0)
        return -1;
    alg->kind = CT_LIBALG_EACH_CALL;
    if (ct_mpit_value(cvar, algorithm, &alg->value) != 0) {
        snprintf(err, errlen, "%s has no algorithm '%s' (see `mpivars`)", name, algorithm);
        return MPI_ERR_ARG;
    }
    /* a companion variable absent from this version is fine, an MPI_T failure not */
    int rc = ct_mpit_var_open(&alg->alg, cvar, NULL);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_open(&alg->device, ct_mpit_find("MPIR_CVAR_DEVICE_COLLECTIVES", &index)
                                                == 0 ? index : -1, "none");
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_open(&alg->fallback, ct_mpit_find("MPIR_CVAR_COLLECTIVE_FALLBACK", &index)
                                                  == 0 ? index : -1, "error");
    if (rc != MPI_SUCCESS)
        snprintf(err, errlen, "MPI_T access to %s failed (error %d)", name, rc);
    return rc;
}

/* Open MPI's variable `coll_<component>_<call>_algorithm` and the value of `algorithm` in it:
 * -1 if this library has no such variable, MPI_ERR_ARG (reason in err) if it lacks the name. */
static int find_openmpi(const char *component, const char *call, const char *algorithm,
                        ct_libalg_kind kind, ct_libalg *alg, int *cvar, char *err, size_t errlen)
{
    char name[160];
    snprintf(name, sizeof name, "coll_%s_%s_algorithm", component, call);
    if (ct_mpit_find(name, cvar) != 0)
        return -1;
    alg->kind = kind;
    if (ct_mpit_value(*cvar, algorithm, &alg->value) != 0) {
        snprintf(err, errlen, "%s has no algorithm '%s' (see `ompi_info --param coll %s "
                 "--level 9`)", name, algorithm, component);
        return MPI_ERR_ARG;
    }
    return MPI_SUCCESS;
}

static int open_libnbc(const char *coll, const char *algorithm, ct_libalg *alg, char *err,
                       size_t errlen)
{
    char call[64];
    int cvar;
    snprintf(call, sizeof call, "i%s", coll);
    int rc = find_openmpi("libnbc", call, algorithm, CT_LIBALG_EACH_CALL, alg, &cvar, err, errlen);
    if (rc == MPI_SUCCESS && (rc = ct_mpit_var_open(&alg->alg, cvar, NULL)) != MPI_SUCCESS)
        snprintf(err, errlen, "MPI_T access to coll_libnbc_%s_algorithm failed (error %d)", call, rc);
    return rc;
}

static int open_openmpi(const char *coll, const char *algorithm, MPI_Comm comm, ct_libalg *alg,
                        char *err, size_t errlen)
{
    char name[160];
    int cvar;
    ct_mpit_var dynamic, han;
    int found = find_openmpi("tuned", coll, algorithm, CT_LIBALG_OPENMPI, alg, &cvar, err, errlen);
    if (found != MPI_SUCCESS)
        return found;
    snprintf(name, sizeof name, "coll_tuned_%s_algorithm", coll);
    int rc = ct_mpit_var_open(&alg->alg, cvar, NULL);
    if (rc == MPI_SUCCESS && !ct_mpit_dynamic_rules(&dynamic)) {
        snprintf(name, sizeof name, "coll_tuned_use_dynamic_rules");
        rc = MPI_T_ERR_CVAR_SET_NEVER;
    } else if (rc == MPI_SUCCESS) {
        ct_mpit_han(&han);   /* several nodes: docs/cluster.md */
        rc = ct_mpit_tuned_comm(comm, &alg->alg, alg->value, &dynamic, &han, &alg->comm);
        ct_mpit_var_close(&dynamic);
        ct_mpit_var_close(&han);
    }
    if (rc == MPI_SUCCESS)
        return MPI_SUCCESS;
    if (rc == MPI_T_ERR_CVAR_SET_NEVER)
        snprintf(err, errlen, "%s is read-only through MPI_T in this library (Open MPI before "
                 "5.0): launch with OMPI_MCA_coll_tuned_use_dynamic_rules=1 (e.g. "
                 "COLLTUNE_MPIEXEC_FLAGS='--mca coll_tuned_use_dynamic_rules 1')", name);
    else
        snprintf(err, errlen, "MPI_T write of %s failed (error %d); is it writable here?", name, rc);
    return rc;
}

/* Intel MPI: the algorithm is fixed for the whole launch by I_MPI_ADJUST_<COLL>, the nonblocking
 * form's (`started`) by I_MPI_ADJUST_I<COLL> (MPI_<Coll>_init follows neither in 2021.18: its
 * schedule is the library's own choice whatever they say, docs/measurement.md). The variant is
 * measured only in a launch started for it (all ranks must agree), so that its name never
 * labels the library's own choice. SMPI has no choice for the nonblocking form. */
static int open_at_launch(const char *coll, const char *algorithm, int started, MPI_Comm comm,
                          ct_libalg *alg, char *err, size_t errlen)
{
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    const char *prefix = "COLLTUNE_SMPI_";
    if (started)
        return -1;
#else
    const char *prefix = started ? "I_MPI_ADJUST_I" : "I_MPI_ADJUST_";
    if (!ct_mpit_intel())
        return -1;
#endif
    char ucoll[64], name[96];
    ct_mpit_upper(ucoll, coll, sizeof ucoll);
    snprintf(name, sizeof name, "%s%s", prefix, ucoll);
    const char *value = getenv(name);
    int mine = value && strcmp(value, algorithm) == 0, all = 0;
    int rc = PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!all) {
        snprintf(err, errlen, "this library fixes algorithms at launch: measure this variant in "
                 "a launch with %s=%s on every rank (colltune bench does so by itself)", name,
                 algorithm);
        return MPI_ERR_ARG;
    }
    alg->kind = CT_LIBALG_LAUNCH;
    return MPI_SUCCESS;
}

int ct_libalg_open(const char *collective, const char *algorithm, MPI_Comm comm, ct_libalg *alg,
                   char *err, size_t errlen)
{
    memset(alg, 0, sizeof *alg);
    alg->comm = MPI_COMM_NULL;
    int rc = open_mpich(collective, algorithm, 0, alg, err, errlen);
    if (rc == -1)
        rc = open_openmpi(collective, algorithm, comm, alg, err, errlen);
    if (rc == -1)
        rc = open_at_launch(collective, algorithm, 0, comm, alg, err, errlen);
    if (rc == -1) {
        snprintf(err, errlen, "this MPI library offers no run-time algorithm choice for %s "
                 "through MPI_T (Intel MPI: the front end sets I_MPI_ADJUST_* per launch)",
                 collective);
        return MPI_ERR_ARG;
    }
    return rc;
}

int ct_libalg_open_started(const char *collective, const char *algorithm, MPI_Comm comm,
                           ct_libalg *alg, char *err, size_t errlen)
{
    memset(alg, 0, sizeof *alg);
    alg->comm = MPI_COMM_NULL;
    int rc = open_mpich(collective, algorithm, 1, alg, err, errlen);
    if (rc == -1)
        rc = open_libnbc(collective, algorithm, alg, err, errlen);
    if (rc == -1)
        rc = open_at_launch(collective, algorithm, 1, comm, alg, err, errlen);
    if (rc == -1) {
        snprintf(err, errlen, "this MPI library offers no algorithm choice for the "
                 "nonblocking %s (Open MPI's libnbc: iallgather, iallreduce, ibcast, iexscan, "
                 "ireduce, iscan; MPICH: all, through MPI_T; Intel MPI: I_MPI_ADJUST_I<COLL> per "
                 "launch)", collective);
        return MPI_ERR_ARG;
    }
    return rc;
}

int ct_libalg_select(const ct_libalg *alg)
{
    if (alg->kind != CT_LIBALG_EACH_CALL)
        return MPI_SUCCESS;
    int rc = ct_mpit_var_set(&alg->alg, alg->value);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_force(&alg->device);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_force(&alg->fallback);
    return rc;
}

int ct_libalg_restore(const ct_libalg *alg)
{
    if (alg->kind != CT_LIBALG_EACH_CALL)
        return MPI_SUCCESS;
    int rc = ct_mpit_var_restore(&alg->alg);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_restore(&alg->device);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_restore(&alg->fallback);
    return rc;
}

void ct_libalg_close(ct_libalg *alg)
{
    if (alg->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&alg->comm);
    ct_mpit_var_close(&alg->alg);
    ct_mpit_var_close(&alg->device);
    ct_mpit_var_close(&alg->fallback);
}

/* Algorithms that are no members, as "<collective>:<name>" or "*:<name>":
 *  - `auto`, Open MPI's `ignore` (value 0): the library's own choice, which is `default`;
 *  - MPICH `ccl`: needs an external CCL library (always refused);
 *  - MPICH `smp`: refused on one rank while running on the other (allreduce, 2 ranks on one
 *    node): a hang, at the cost of a timeout per proof;
 *  - MPICH reduce_scatter `noncommutative`: aborts on an assertion at non-power-of-two sizes
 *    instead of refusing;
 *  - Open MPI bcast `split_binary_tree`, `scatter_allgather(_ring)`: split the message by element
 *    count, so a bcast whose root passes another (count, datatype) of the same signature than
 *    the others (legal; tests/programs/ct_rootonly.c) hangs or fails with MPI_ERR_TRUNCATE.
 * The proof (docs/select.md) would refuse each of them too; they are kept out of the portfolio so
 * that no run pays for what is known to be unusable. */
static const char *const mpich_skipped[] = {"*:auto", "*:ccl", "*:smp", "reduce_scatter:noncommutative"};
static const char *const ompi_skipped[] = {"*:ignore", "bcast:split_binary_tree", "bcast:scatter_allgather",
                                           "bcast:scatter_allgather_ring"};

int ct_libalg_skipped(int mpich, const char *collective, const char *name, int value)
{
    const char *const *list = mpich ? mpich_skipped : ompi_skipped;
    size_t n = mpich ? sizeof mpich_skipped / sizeof *list : sizeof ompi_skipped / sizeof *list;
    size_t clen = strlen(collective);
    for (size_t i = 0; i < n; i++) {
        const char *colon = strchr(list[i], ':');
        int any = list[i][0] == '*';
        int same = any || ((size_t)(colon - list[i]) == clen && strncmp(list[i], collective, clen) == 0);
        if (same && strcmp(colon + 1, name) == 0)
            return 1;
    }
    return !mpich && value == 0;
}

/* A member only where the runtime can force it: the variable takes a write (not Open MPI 4.1's
 * read-only ones) and, Open MPI, dynamic rules are on or can be switched on. */
static int ct_forceable(int cvar, int mpich)
{
    ct_mpit_var v;
    int ok = ct_mpit_var_open(&v, cvar, NULL) == MPI_SUCCESS && v.present;
    ct_mpit_var_close(&v);
    if (ok && !mpich) {
        ok = ct_mpit_dynamic_rules(&v);
        ct_mpit_var_close(&v);
    }
    return ok;
}

/* The nonblocking form's algorithms that are no members: the library's own choice (MPICH
 * `auto`/`sched_auto`, Open MPI's value 0), MPICH's `sched_smp` (refused on one rank while
 * running on the other, as the blocking `smp`) and `sched_noncommutative`, and its
 * alltoall(v/w) `*_inplace` ones, which MPICH refuses unless the call is in place (and then
 * leaks the failed request: "freeing inactive persistent request" at MPI_Finalize). */
int ct_libalg_skipped_started(int mpich, const char *name, int value)
{
    if (!mpich)
        return value == 0;
    return strcmp(name, "auto") == 0 || strcmp(name, "sched_auto") == 0
           || strcmp(name, "sched_smp") == 0 || strcmp(name, "sched_noncommutative") == 0
           || strstr(name, "inplace") != NULL;
}

int ct_libalg_members(const char *collective, int started, char names[][64], int max)
{
    char ucoll[64], cvar_name[160];
    int cvar, mpich = 1;
    ct_mpit_upper(ucoll, collective, sizeof ucoll);
    snprintf(cvar_name, sizeof cvar_name, "MPIR_CVAR_%s%s_INTRA_ALGORITHM", started ? "I" : "", ucoll);
    if (ct_mpit_find(cvar_name, &cvar) != 0) {
        mpich = 0;
        snprintf(cvar_name, sizeof cvar_name, "coll_%s_%s%s_algorithm", started ? "libnbc" : "tuned",
                 started ? "i" : "", collective);
        if (ct_mpit_find(cvar_name, &cvar) != 0)
            return 0;
    }
    /* the runtime offers no member it cannot force (Open MPI before 5.0); libnbc's variables
     * need no dynamic rules */
    if (started ? !ct_forceable(cvar, 1) : !ct_forceable(cvar, mpich))
        return 0;
    char listed[64][CT_MPIT_NAME];
    int values[64];
    int n = ct_mpit_list(cvar, listed, values, 64), kept = 0;
    for (int i = 0; i < n && kept < max; i++)
        if (started ? !ct_libalg_skipped_started(mpich, listed[i], values[i])
                    : !ct_libalg_skipped(mpich, collective, listed[i], values[i]))
            snprintf(names[kept++], 64, "%s", listed[i]);
    return kept;
}

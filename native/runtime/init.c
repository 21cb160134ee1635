/*
 * MPI_Init, MPI_Init_thread and MPI_Finalize: the only hand-written MPI_* entry points.
 *
 * At init every rank reads the settings, then one PMPI_Allreduce over MPI_COMM_WORLD checks that
 * all ranks read the same ones (the decision point relies on it: a rank that forced a variant
 * while another did not would hang the application). The outcome is identical on every rank:
 *   - COLLTUNE_FORCE invalid on some rank   -> error on rank 0, PMPI_Abort on all ranks;
 *   - force/scratch/chunk settings differ   -> one warning, every mode off (pass-through);
 *   - profile unreadable or differing       -> one warning, profile mode off;
 *   - selection table bad or differing      -> one warning, learning mode off (learn.c).
 * The same PMPI_Allreduce carries rank 0's seed of the learning mode to every rank and checks
 * that the ranks sample alike in profiling mode (profrun.c): one collective at init, all modes.
 */
#include <stdlib.h>
#include <string.h>

#include "ct_layout.h"
#include "ct_profile.h"
#include "ct_profrun.h"
#include "ct_runtime.h"
#include "ct_settings.h"

/* Identity of this process and the verbose flag, for MPI_Finalize; written in MPI_Init. */
static int ct_rank = -1;
static int ct_nprocs;
static int ct_verbose;
static ct_profile *ct_loaded;

enum { CT_PROFILE_NONE = 0, CT_PROFILE_BAD = 1, CT_PROFILE_OK = 2 };

/* What the ranks compare, packed for one PMPI_Allreduce with MPI_MAX: a value x and its
 * complement ~x give max(x) and ~min(x), so equal extremes mean all ranks agree. */
enum { CT_V_FORCE_BAD, CT_V_CFG, CT_V_CFG_NOT, CT_V_PSTATE, CT_V_PSTATE_NOT, CT_V_PHASH,
       CT_V_PHASH_NOT, CT_V_PROOF, CT_V_PROOF_NOT, CT_V_LEARN,
       CT_V_PROFRUN = CT_V_LEARN + CT_LEARN_SLOTS,
       CT_V_COUNT = CT_V_PROFRUN + CT_PROFRUN_SLOTS };

static uint64_t ct_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The settings that change decisions (not COLLTUNE_VERBOSE: counting decides nothing). */
static uint64_t ct_config_hash(const int force[CT_FORCE_SLOTS])
{
    uint64_t h = 14695981039346656037ull;
    for (int c = 0; c < CT_FORCE_SLOTS; c++) {
        int64_t f = force[c];
        h = ct_fnv1a(h, &f, sizeof f);
    }
    uint64_t cap = colltune_scratch_cap(), chunk = colltune_chunk_bytes(), warm = ct_warmup_calls;
    h = ct_fnv1a(h, &cap, sizeof cap);
    h = ct_fnv1a(h, &warm, sizeof warm);
    return ct_fnv1a(h, &chunk, sizeof chunk);
}

static const char *ct_profile_path(void)
{
    const char *path = getenv(CT_ENV_PROFILE);
    return path != NULL && path[0] != '\0' ? path : NULL;
}

static int ct_agree(const uint64_t *v, int lo, int not)
{
    return v[lo] == ~v[not];
}

static void ct_profile_verdict(const uint64_t *v, int state, const char *path, const char *err)
{
    if (ct_rank != 0)
        return;
    if (state == CT_PROFILE_BAD)
        ct_message("warning: COLLTUNE_PROFILE ignored, every call goes to the library: %s", err);
    else if (!ct_agree(v, CT_V_PSTATE, CT_V_PSTATE_NOT))
        ct_message("warning: COLLTUNE_PROFILE=%s ignored, every call goes to the library: it is "
                   "unset or unreadable on some ranks (give it to all ranks, e.g. with "
                   "`colltune run --profile`)", path ? path : "(unset on rank 0)");
    else
        ct_message("warning: COLLTUNE_PROFILE=%s ignored, every call goes to the library: the "
                   "ranks read profiles with different rules (content hash differs); use one "
                   "file visible to all ranks", path);
}

static void ct_print_settings(const int force[CT_FORCE_SLOTS], const char *path)
{
    ct_message("libcolltune active on %d ranks (built for %s)", ct_nprocs,
#if defined(COLLTUNE_ABI_FAMILY_OPENMPI)
               "Open MPI"
#elif defined(COLLTUNE_ABI_FAMILY_SMPI)
               "SimGrid SMPI"
#else
               "MPICH family"
#endif
    );
    for (int c = 0; c < CT_FORCE_SLOTS; c++)
        if (force[c] != CT_FORCE_UNSET)
            ct_message("force %s=%s", colltune_collective_name(c % CT_NUM_COLLECTIVES),
                       force[c] == CT_FORCE_LIBRARY ? "library" : ct_member_name(force[c]));
    if (ct_loaded != NULL)
        ct_message("profile %s (content hash %016llx)", path,
                   (unsigned long long)ct_profile_hash(ct_loaded));
    ct_message("scratch cap %zu bytes, chunk %zu bytes", colltune_scratch_cap(),
               colltune_chunk_bytes());
    if (colltune_mpich_ring_setting() != NULL)
        ct_message("%s=%s moves MPICH's Allgatherv ring: allgather_as_allgatherv, "
                   "bcast_as_allgatherv and the lib:allgatherv ring members (ring, sched_ring) "
                   "serve no call (not-applicable:%s)", colltune_mpich_ring_setting(),
                   colltune_mpich_ring_setting_value(), colltune_mpich_ring_setting());
    if (ct_warmup_calls != 0)
        ct_message("library warm-up: the first %u Barrier/Bcast/Reduce/Allreduce calls of each "
                   "communicator go to the library, with every call between them",
                   ct_warmup_calls);
}

static int ct_any_forced(const int force[CT_FORCE_SLOTS])
{
    for (int c = 0; c < CT_FORCE_SLOTS; c++)
        if (force[c] >= 0)
            return 1;
    return 0;
}

static int ct_any_library_forced(const int force[CT_FORCE_SLOTS])
{
    for (int c = 0; c < CT_FORCE_SLOTS; c++)
        if (force[c] >= CT_LIB_BASE)
            return 1;
    return 0;
}

/* MPICH counts the collective calls each communicator sees and switches its node-level
 * algorithms after a threshold (MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD, 5 in MPICH 5.0.2), and with
 * them the bits of a floating-point sum: one call of ours on MPI_COMM_WORLD made the
 * application's fourth reduction take the new path a call early (tests/programs/
 * reduction_hashes.c, 4 ranks). Our agreement runs on a private duplicate, whose own creation
 * the counter does not see, so MPI_COMM_WORLD sees exactly the application's calls. The
 * duplicate is kept for MPI_COMM_WORLD's layout (core/layout.c) until MPI_Finalize. */
static int ct_agree_privately(uint64_t *v, int n)
{
    MPI_Comm own;
    int rc = ct_world_twin_open(&own);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MAX, own);
    if (rc != MPI_SUCCESS)
        ct_world_twin_close();   /* libcolltune is off: no layout will need it */
    return rc;
}

/* The profile's library algorithms this library does not offer: one warning naming them (their
 * rules leave the calls to the library). */
static void ct_profile_warn_missing(const char *path)
{
    char names[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < ct_profile_name_count(ct_loaded) && used < sizeof names; i++)
        if (ct_libalg_find(ct_profile_name(ct_loaded, i)) < 0)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                     ct_profile_name(ct_loaded, i));
    ct_message("warning: profile %s names library algorithms this MPI library does not offer "
               "(%s): their rules leave those calls to the library (write the profile for this "
               "library)", path, names);
}

/* Everything MPI_Init and MPI_Init_thread do after the library is up. */
static void ct_runtime_start(void)
{
    char force_err[1536] = "", profile_err[1024] = "", learn_err[1024] = "";
    int force[CT_FORCE_SLOTS];

    PMPI_Comm_rank(MPI_COMM_WORLD, &ct_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &ct_nprocs);
    int verbose_bad = ct_env_bool(CT_ENV_VERBOSE, CT_DEFAULT_VERBOSE, &ct_verbose) != 0;
    /* The profile is read first: its nonblocking and persistent sections name library
     * algorithms, which are registered next, before anything resolves a name. */
    const char *path = ct_profile_path();
    int state = CT_PROFILE_NONE;
    if (path != NULL)
        state = ct_profile_load(path, &ct_loaded, profile_err, sizeof profile_err) == 0
                    ? CT_PROFILE_OK : CT_PROFILE_BAD;
    int profile_lib = ct_profile_name_count(ct_loaded) > 0;
    /* The library's algorithms are registered first: tables, profiles and COLLTUNE_FORCE may
     * name them. */
    const char *force_text = getenv(CT_ENV_FORCE);
    int force_lib = force_text != NULL && strstr(force_text, "lib:") != NULL;
    uint64_t portfolio = ct_learn_wanted() || force_lib || profile_lib ? ct_libalg_setup() : 0;
    int force_bad = ct_force_parse(force_text, force, force_err, sizeof force_err) != 0;
    if (force_bad && ct_rank == 0)   /* printed before the abort below can kill rank 0 */
        ct_message("error: %s (aborting: fix or unset COLLTUNE_FORCE)", force_err);
    int profile_missing = profile_lib ? ct_profile_resolve(ct_loaded, ct_libalg_find) : 0;

    /* Only where something may serve calls: a preloaded pass-through asks MPI_T nothing. */
    char warmup_err[256] = "";
    int serving = path != NULL || ct_learn_wanted() || ct_any_forced(force);
    int warmup_bad = serving && ct_warmup_start(warmup_err, sizeof warmup_err) != 0;
    if (warmup_bad && ct_rank == 0)
        ct_message("warning: %s", warmup_err);
    /* MPICH's Allgatherv settings move the bound GL4, GL9 and the ring members keep to (core/
     * applicable.c): read where something may serve calls, compared with the other settings
     * (ranks that read different ones would answer differently: libcolltune goes off). */
    const char *ring = serving ? colltune_mpich_ring_settings() : NULL;
    uint64_t cfg = ct_config_hash(force) ^ (force_lib || profile_lib ? portfolio : 0);
    if (ring != NULL)
        cfg = ct_fnv1a(ct_fnv1a(cfg, ring, strlen(ring)), colltune_mpich_ring_setting_value(),
                       strlen(colltune_mpich_ring_setting_value()));
    uint64_t phash = ct_loaded != NULL ? ct_profile_hash(ct_loaded) : 0;
    uint64_t v[CT_V_COUNT] = {(uint64_t)force_bad, cfg, ~cfg, (uint64_t)state,
                              ~(uint64_t)state, phash, ~phash};
    int learn = ct_learn_prepare(v + CT_V_LEARN, portfolio, learn_err, sizeof learn_err)
                != CT_LEARN_OFF;
    /* After the learning mode registered library members; only where something may serve calls
     * (a preloaded pass-through reads no file). Ranks that differ here differ in their settings
     * too, and the checks below turn libcolltune off for them. */
    uint64_t proof = path != NULL || learn || ct_any_forced(force) ? ct_proof_load() : 0;
    v[CT_V_PROOF] = proof, v[CT_V_PROOF_NOT] = ~proof;
    if (ct_rank != 0)
        v[CT_V_LEARN + CT_L_SEED] = 0;
    ct_profrun_prepare(v + CT_V_PROFRUN);   /* MPI_MAX then gives every rank rank 0's seed */
    if (ct_agree_privately(v, CT_V_COUNT) != MPI_SUCCESS) {
        if (ct_rank == 0)
            ct_message("warning: could not compare settings across ranks; libcolltune is off");
        ct_profile_free(ct_loaded);
        ct_loaded = NULL;
        ct_learn_stop();
        ct_libalg_finish();
        return;
    }
    if (v[CT_V_FORCE_BAD]) {
        if (ct_rank == 0 && !force_bad)
            ct_message("error: COLLTUNE_FORCE is invalid on some ranks (aborting: give all "
                       "ranks the same valid setting, e.g. with `colltune run --force`)");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }

    int profile_ok = v[CT_V_PSTATE] == CT_PROFILE_OK && ct_agree(v, CT_V_PSTATE, CT_V_PSTATE_NOT)
                     && ct_agree(v, CT_V_PHASH, CT_V_PHASH_NOT);
    if (v[CT_V_PSTATE] != CT_PROFILE_NONE && !profile_ok) {
        ct_profile_verdict(v, state, path, profile_err);
        ct_profile_free(ct_loaded);
        ct_loaded = NULL;
    }
    if (!ct_agree(v, CT_V_CFG, CT_V_CFG_NOT)) {
        if (ct_rank == 0)
            ct_message("warning: COLLTUNE_FORCE, COLLTUNE_SCRATCH_BYTES, COLLTUNE_CHUNK_BYTES, "
                       "COLLTUNE_LIBRARY_WARMUP or MPICH's Allgatherv settings differ across ranks; "
                       "libcolltune is off, every call goes to the library (give all ranks the "
                       "same settings, e.g. with `colltune run`)");
        ct_profile_free(ct_loaded);
        ct_loaded = NULL;
        for (int c = 0; c < CT_FORCE_SLOTS; c++)
            force[c] = CT_FORCE_UNSET;
        v[CT_V_LEARN + CT_L_STATE] = CT_LEARN_OFF;
    }
    if (!ct_agree(v, CT_V_PROOF, CT_V_PROOF_NOT)) {
        if (ct_rank == 0)
            ct_message("warning: the ranks read different proofs (%s); no variant serves any "
                       "call (give all ranks the same build cache or COLLTUNE_PROOF)",
                       ct_proof_where());
        ct_proof_clear();
    }
    if (ct_rank == 0 && !ct_proof_loaded() && (ct_loaded != NULL || learn || ct_any_forced(force)))
        ct_message(ct_proof_stale()
                   ? "warning: the proof at %s is of an older format, whose classes meant less: "
                     "no variant serves any call until `colltune selftest` has redone it"
                   : "warning: no proof for this library at %s: no variant serves any call until "
                     "`colltune selftest` has proven them here", ct_proof_where());
    if (learn || v[CT_V_LEARN + CT_L_STATE] != CT_LEARN_OFF)
        learn = ct_learn_start(v + CT_V_LEARN, ct_rank, ct_nprocs, learn_err);

    int profile_serves_lib = ct_loaded != NULL
                             && (size_t)profile_missing < ct_profile_name_count(ct_loaded);
    if (!learn && !ct_any_library_forced(force) && !profile_serves_lib)
        ct_libalg_finish();   /* no mode can serve a library algorithm: MPI_T not kept open */
    if (ct_rank == 0 && ct_loaded != NULL && profile_missing > 0)
        ct_profile_warn_missing(path);
    ct_modes_install(force, ct_loaded, learn, ct_verbose);
    ct_profrun_start(v + CT_V_PROFRUN, ct_rank, ct_nprocs);
    ct_modes_watch_started();   /* after the profiling mode set ct_watch */
    if (ct_rank == 0) {
        if (verbose_bad)
            ct_message("warning: COLLTUNE_VERBOSE=%s is not 0 or 1; counting is off",
                       getenv(CT_ENV_VERBOSE));
        ct_warn_unknown_settings();
        if (ct_verbose || ct_profrun_on)   /* where the user looks at what colltune sees */
            ct_f08_check(ct_rank);
        if (ct_verbose)
            ct_print_settings(force, path);
        if (ct_verbose && learn)
            ct_learn_describe();
    }
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        ct_runtime_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        ct_runtime_start();
    return rc;
}

int MPI_Finalize(void)
{
    ct_profrun_finish();
    if (ct_verbose && ct_rank == 0)
        ct_count_print(stderr, ct_rank, ct_nprocs);
    ct_modes_clear();
    ct_warmup_stop();
    ct_learn_finish();
    ct_libalg_finish();   /* after the learning mode, which still names its members */
    ct_profile_free(ct_loaded);
    ct_loaded = NULL;
    ct_proof_clear();
    ct_world_twin_close();
    return PMPI_Finalize();
}

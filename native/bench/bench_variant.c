/*
 * One variant of a job (docs/measurement.md): resolved from its name (a mock-up, the library's
 * default or one of its own algorithms forced through MPI_T, a tuning profile's choice), tried
 * once where the library may refuse it, selected and run.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "ct_catalog.h"
#include "ct_libalg.h"

/* `started`: the algorithm of the nonblocking and persistent forms (ct_libalg_open_started). */
static libalg_slot *libalg_get(run_ctx *ctx, const char *name, const char *coll, const char *alg,
                               int started)
{
    for (int i = 0; i < ctx->nlibalgs; i++)
        if (strcmp(ctx->libalgs[i].name, name) == 0)
            return &ctx->libalgs[i];
    if (ctx->nlibalgs == CT_MAX_LIBALGS)
        return NULL;
    libalg_slot *slot = &ctx->libalgs[ctx->nlibalgs++];
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->err[0] = '\0';
    slot->rc = started ? ct_libalg_open_started(coll, alg, ctx->comm, &slot->alg, slot->err,
                                                sizeof slot->err)
                       : ct_libalg_open(coll, alg, ctx->comm, &slot->alg, slot->err, sizeof slot->err);
    if (slot->rc != MPI_SUCCESS && slot->err[0] == '\0')
        snprintf(slot->err, sizeof slot->err, "MPI error %d", slot->rc);
    return slot;
}

/* Did the trial call succeed on every rank? If not, `why` says what failed: `prefix` and the
 * library's own reason where this rank has one. */
static int agreed(run_ctx *ctx, int rc, const char *prefix, char *why, size_t whylen)
{
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
        snprintf(why, whylen, "%s: %.190s", prefix, last ? last + 1 : text);
    }
    return all;
}

/* One call before measuring: a library that refuses the forced algorithm for this call (MPICH
 * with fallback=error, Open MPI's two_proc on more processes) says so with an error code on
 * every rank (its checks use uniform arguments), and the variant is skipped rather than
 * aborting the launch. Returns 1 if the algorithm ran everywhere. */
static int library_trial(run_ctx *ctx, const ct_variant *v, char *why, size_t whylen)
{
    int rc = ct_run_prepare(ctx, v);
    if (rc == MPI_SUCCESS)
        rc = ct_run_invoke(ctx, v);
    /* Back to the library's values at once: the next library variant reads them as its
     * originals when it is opened. */
    int restored = ct_run_prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1});
    if (rc == MPI_SUCCESS)
        rc = restored;
    return agreed(ctx, rc, "the library refused this algorithm for this call", why, whylen);
}

/* `default#<form>`: the library's own collective in another form the standard defines for it
 * (collectives.toml `forms`), timed as the blocking call is: its start (for the persistent
 * form MPI_Start of a request initialized once per job, outside every timed region) and the
 * MPI_Wait that completes it. `lib:<coll>:<alg>#<form>`: the same with one of the library's
 * own algorithms of that form forced (selected before the start and before the persistent
 * request's initialization, where the libraries fix a persistent request's algorithm). */
static const struct { const char *name; ct_variant_kind kind; } form_variants[] = {
    {"default#nonblocking", CT_VK_NONBLOCKING},
    {"default#persistent", CT_VK_PERSISTENT},
};

static int start_and_wait(const ct_variant *v)
{
    MPI_Request request = v->request;   /* a persistent request keeps its handle */
    int rc = v->kind == CT_VK_PERSISTENT ? PMPI_Start(&request)
                                         : colltune_start_library(&v->call, &request);
    return rc == MPI_SUCCESS ? PMPI_Wait(&request, MPI_STATUS_IGNORE) : rc;
}

/* A neighborhood collective's library algorithm of the nonblocking form (its job's call has no
 * row of the decision point: bench_neighbor.c runs it), once on every rank with it set. */
static int neighbor_form_trial(run_ctx *ctx, ct_variant *v, char *why, size_t whylen)
{
    int rc = ct_run_prepare(ctx, v);
    if (rc == MPI_SUCCESS)
        rc = ct_neighbor_invoke(v);
    int restored = ct_run_prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1});
    rc = rc == MPI_SUCCESS ? restored : rc;
    return agreed(ctx, rc, "the library refused this algorithm for its MPI_Ineighbor_ call", why,
                  whylen);
}

/* Set the form up and run it once on every rank, unless the row or the library lacks it (the
 * same on every rank: the same row, the same build) or refuses the forced algorithm. */
static int form_trial(run_ctx *ctx, ct_variant *v, char *why, size_t whylen)
{
    if (v->nb != NULL)
        return neighbor_form_trial(ctx, v, why, whylen);
    int persistent = v->kind == CT_VK_PERSISTENT;
    const char *mpi = ct_collectives[v->call.coll].mpi;
    char function[CT_NAME_LEN];
    if (persistent)
        snprintf(function, sizeof function, "%s_init", mpi);
    else {
        snprintf(function, sizeof function, "MPI_I%s", mpi + 4);
        for (char *c = function + 5; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
    unsigned form = persistent ? CT_ROW_PERSISTENT : CT_ROW_NONBLOCKING;
    if (!(ct_collectives[v->call.coll].forms & form)) {
        snprintf(why, whylen, "%s: the standard defines no such form (collectives.toml `forms`)",
                 function);
        return 0;
    }
    if (persistent && !CT_HAVE_PERSISTENT) {
        snprintf(why, whylen,
                 "%s: this MPI library does not declare MPI-4's persistent collectives", function);
        return 0;
    }
    v->request = MPI_REQUEST_NULL;
    int rc = ct_run_prepare(ctx, v);
    if (rc == MPI_SUCCESS && persistent)
        rc = colltune_init_library(&v->call, MPI_INFO_NULL, &v->request);
    if (rc == MPI_SUCCESS)
        rc = start_and_wait(v);
    int restored = ct_run_prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1});
    rc = rc == MPI_SUCCESS ? restored : rc;
    char prefix[2 * CT_NAME_LEN];
    if (v->libalg >= 0)
        snprintf(prefix, sizeof prefix, "the library refused this algorithm for %s", function);
    else
        snprintf(prefix, sizeof prefix, "%s failed", function);
    if (agreed(ctx, rc, prefix, why, whylen))
        return 1;
    if (v->request != MPI_REQUEST_NULL)
        PMPI_Request_free(&v->request);
    return 0;
}

/* `lib:<coll>:<alg>` (blocking) or `lib:<coll>:<alg>#<form>` (docs/measurement.md). */
static int resolve_library(run_ctx *ctx, const ct_job *job, const char *name, ct_variant *v,
                           char *why, size_t whylen)
{
    char coll[CT_NAME_LEN], alg[CT_NAME_LEN];
    const char *sep = strchr(name + 4, ':');
    size_t len = sep ? (size_t)(sep - (name + 4)) : 0;
    const char *hash = sep ? strchr(sep + 1, '#') : NULL;
    size_t alen = sep ? (hash ? (size_t)(hash - sep - 1) : strlen(sep + 1)) : 0;
    if (!sep || len >= sizeof coll || alen == 0 || alen >= sizeof alg) {
        snprintf(why, whylen, "library variants are named lib:<collective>:<algorithm>, "
                 "lib:<collective>:<algorithm>#nonblocking or ...#persistent");
        return 0;
    }
    memcpy(coll, name + 4, len);
    coll[len] = '\0';
    memcpy(alg, sep + 1, alen);
    alg[alen] = '\0';
    if (strcmp(coll, job->collective) != 0) {
        snprintf(why, whylen, "an algorithm of %s, not of %s", coll, job->collective);
        return 0;
    }
    v->kind = CT_VK_LIBRARY;
    if (hash) {
        size_t i = 0, n = sizeof form_variants / sizeof form_variants[0];
        while (i < n && strcmp(strchr(form_variants[i].name, '#'), hash) != 0)
            i++;
        if (i == n) {
            snprintf(why, whylen, "unknown form '%s': library variants of the other forms end in "
                     "#nonblocking or #persistent", hash);
            return 0;
        }
        v->kind = form_variants[i].kind;
    }
    /* opening reads the library's current values as the ones to restore */
    if (ct_run_prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1}) != MPI_SUCCESS) {
        snprintf(why, whylen, "cannot restore the library's algorithm settings");
        return 0;
    }
    libalg_slot *slot = libalg_get(ctx, name, coll, alg, hash != NULL);
    if (!slot) {
        snprintf(why, whylen, "more than %d library algorithms in one launch", CT_MAX_LIBALGS);
        return 0;
    }
    if (slot->rc != MPI_SUCCESS) {
        snprintf(why, whylen, "%s", slot->err);
        return 0;
    }
    v->libalg = (int)(slot - ctx->libalgs);
    if (hash)
        return form_trial(ctx, v, why, whylen);
    if (slot->alg.comm != MPI_COMM_NULL && v->nb == NULL)
        v->call.comm = slot->alg.comm;
    return library_trial(ctx, v, why, whylen);
}

/* Decide how to run `name` for this job, or why it cannot run (returns 0 and fills why). */
int ct_run_resolve(run_ctx *ctx, const ct_job *job, const ct_call *call,
                   const char *name, ct_variant *v, char *why, size_t whylen)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->call = *call;
    v->libalg = -1;
    v->index = -1;
    v->request = MPI_REQUEST_NULL;
    if (ctx->nb != NULL) {   /* a neighborhood collective's job (bench_neighbor.c) */
        int known = ct_neighbor_resolve(ctx->nb, name, v, why, whylen);
        if (known >= 0)
            return known;
        const char *form = strncmp(name, "lib:", 4) == 0 ? strchr(name, '#') : "";
        if (form == NULL || (*form && strcmp(form, "#nonblocking") == 0)) {
            v->nb = ctx->nb;   /* the library's algorithm of the blocking call on the torus, */
            if (form != NULL)  /* or of MPI_Ineighbor_<coll> + MPI_Wait there */
                ct_neighbor_started(v);
            return resolve_library(ctx, job, name, v, why, whylen);
        }
        snprintf(why, whylen, "not measured for the neighborhood collectives (their variants: "
                 "docs/guidelines.md, \"Neighborhood collectives\")");
        return 0;
    }
    for (size_t i = 0; i < sizeof form_variants / sizeof form_variants[0]; i++)
        if (strcmp(name, form_variants[i].name) == 0) {
            v->kind = form_variants[i].kind;
            return form_trial(ctx, v, why, whylen);
        }
    if (strcmp(name, "default") == 0 || strcmp(name, "default#aa") == 0) {
        v->kind = name[7] ? CT_VK_AA : CT_VK_DEFAULT;
        return 1;
    }
    if (strcmp(name, "tuned") == 0) {
        if (!ctx->profile) {
            snprintf(why, whylen, "`tuned` needs --profile FILE");
            return 0;
        }
        v->kind = CT_VK_TUNED;
        return 1;
    }
    if (strncmp(name, "lib:", 4) == 0)
        return resolve_library(ctx, job, name, v, why, whylen);
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
int ct_run_prepare(run_ctx *ctx, const ct_variant *v)
{
    int want = v->libalg;   /* -1 but for library algorithms, of any form */
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
    int variant = ct_profile_lookup_layout(ctx->profile, call->coll, ctx->size, ctx->nodes,
                                           ctx->ppn, colltune_call_bytes(call));
    if (variant >= 0 && colltune_applicable(variant, call) == COLLTUNE_APPLICABLE)
        return colltune_invoke(variant, call);
    return colltune_invoke_library(call);
}

int ct_run_invoke(const run_ctx *ctx, const ct_variant *v)
{
    if (v->nb != NULL)
        return ct_neighbor_invoke(v);
    switch (v->kind) {
    case CT_VK_MOCKUP: return colltune_invoke(v->index, &v->call);
    case CT_VK_TUNED: return invoke_tuned(ctx, &v->call);
    case CT_VK_NONBLOCKING: case CT_VK_PERSISTENT: return start_and_wait(v);
    case CT_VK_DEFAULT: case CT_VK_AA: case CT_VK_LIBRARY: break;
    }
    return colltune_invoke_library(&v->call);
}

int ct_run_release(ct_variant *vars, int nv)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < nv; i++)
        if (vars[i].kind == CT_VK_PERSISTENT && vars[i].request != MPI_REQUEST_NULL) {
            int freed = PMPI_Request_free(&vars[i].request);
            rc = rc == MPI_SUCCESS ? freed : rc;
        }
    return rc;
}

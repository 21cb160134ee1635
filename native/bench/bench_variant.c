/*
 * One variant of a job (docs/measurement.md): resolved from its name (a mock-up, the library's
 * default or one of its own algorithms forced through MPI_T, a tuning profile's choice), tried
 * once where the library may refuse it, selected and run.
 */
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "ct_libalg.h"

static libalg_slot *libalg_get(run_ctx *ctx, const char *name, const char *coll, const char *alg)
{
    for (int i = 0; i < ctx->nlibalgs; i++)
        if (strcmp(ctx->libalgs[i].name, name) == 0)
            return &ctx->libalgs[i];
    if (ctx->nlibalgs == CT_MAX_LIBALGS)
        return NULL;
    libalg_slot *slot = &ctx->libalgs[ctx->nlibalgs++];
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->err[0] = '\0';
    slot->rc = ct_libalg_open(coll, alg, ctx->comm, &slot->alg, slot->err, sizeof slot->err);
    if (slot->rc != MPI_SUCCESS && slot->err[0] == '\0')
        snprintf(slot->err, sizeof slot->err, "MPI error %d", slot->rc);
    return slot;
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
        snprintf(why, whylen, "the library refused this algorithm for this call: %.190s",
                 last ? last + 1 : text);
    }
    return all;
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
    if (strncmp(name, "lib:", 4) == 0) {
        char coll[CT_NAME_LEN];
        const char *sep = strchr(name + 4, ':');
        size_t len = sep ? (size_t)(sep - (name + 4)) : 0;
        if (!sep || len >= sizeof coll || sep[1] == '\0') {
            snprintf(why, whylen, "library variants are named lib:<collective>:<algorithm>");
            return 0;
        }
        memcpy(coll, name + 4, len);
        coll[len] = '\0';
        if (strcmp(coll, job->collective) != 0) {
            snprintf(why, whylen, "an algorithm of %s, not of %s", coll, job->collective);
            return 0;
        }
        /* opening reads the library's current values as the ones to restore */
        if (ct_run_prepare(ctx, &(ct_variant){.kind = CT_VK_DEFAULT, .libalg = -1}) != MPI_SUCCESS) {
            snprintf(why, whylen, "cannot restore the library's algorithm settings");
            return 0;
        }
        libalg_slot *slot = libalg_get(ctx, name, coll, sep + 1);
        if (!slot) {
            snprintf(why, whylen, "more than %d library algorithms in one launch", CT_MAX_LIBALGS);
            return 0;
        }
        if (slot->rc != MPI_SUCCESS) {
            snprintf(why, whylen, "%s", slot->err);
            return 0;
        }
        v->kind = CT_VK_LIBRARY;
        v->libalg = (int)(slot - ctx->libalgs);
        if (slot->alg.comm != MPI_COMM_NULL)
            v->call.comm = slot->alg.comm;
        return library_trial(ctx, v, why, whylen);
    }
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
    int want = v->kind == CT_VK_LIBRARY ? v->libalg : -1;
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
    switch (v->kind) {
    case CT_VK_MOCKUP: return colltune_invoke(v->index, &v->call);
    case CT_VK_TUNED: return invoke_tuned(ctx, &v->call);
    case CT_VK_DEFAULT: case CT_VK_AA: case CT_VK_LIBRARY: break;
    }
    return colltune_invoke_library(&v->call);
}

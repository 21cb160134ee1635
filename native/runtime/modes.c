/*
 * The decision point and the settings of the modes.
 *
 * Modes are asked in a fixed order (force, then profile, then learning: learn.c): the first
 * mode that has an opinion about a collective decides, and if the variant it names cannot serve
 * the call exactly, the library serves it (and the counting table says why). A mode may also
 * name "library": that is an opinion too, so `COLLTUNE_FORCE=bcast=library` shields MPI_Bcast
 * from the profile.
 *
 * Process-global state here is written once in MPI_Init (ct_modes_install) and only read
 * afterwards; MPI_Init happens before any collective, so threads see it without atomics.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_profile.h"
#include "ct_profrun.h"
#include "ct_runtime.h"
#include "ct_member.h"
#include "ct_settings.h"
#include "ct_watch.h"


static int ct_force[CT_FORCE_SLOTS];
static int ct_force_started_any;   /* some nonblocking or persistent form has a forced member */
static int ct_prof_started_any;    /* ... or a profile section */
static ct_profile *ct_prof;
static int ct_counting;
/* 1 where the profile has layout blocks for the collective: only then is the communicator's
 * layout asked for (fixed at MPI_Init; a call to ct_profile_has_layouts costs 15 instructions). */
static unsigned char ct_prof_layouts[CT_NUM_COLLECTIVES];
/* 1 where the profile has a section for the collective's nonblocking (persistent) form, slot
 * form * CT_NUM_COLLECTIVES + coll as ct_force's (fixed at MPI_Init). */
static unsigned char ct_prof_started[CT_FORCE_SLOTS];

/* Which mode decides each collective, fixed at MPI_Init from the modes' order: one load and one
 * switch per call instead of a test per mode. CT_ROUTE_LEARN_FAST: the learning mode decides
 * and nothing else looks at the decision (no counting), so learn.c runs the whole call. */
enum { CT_ROUTE_NONE, CT_ROUTE_FORCE, CT_ROUTE_PROFILE, CT_ROUTE_LEARN, CT_ROUTE_LEARN_FAST };
static unsigned char ct_route[CT_NUM_COLLECTIVES];
/* 1 where the learning mode alone decides MPI_I<coll> (CT_ROUTE_LEARN_FAST: no counting) and no
 * member of the nonblocking form is forced (set with ct_start_watch): learn.c runs the whole
 * call, as it does for the blocking calls of such a collective. */
static unsigned char ct_learned_starts[CT_NUM_COLLECTIVES];


static ct_decision ct_ask_profile(const ct_call *call)
{
    ct_decision d = {-1, -1, CT_MODE_NONE, COLLTUNE_APPLICABLE};
    int size;
    if (PMPI_Comm_size(call->comm, &size) != MPI_SUCCESS)
        return d;
    int64_t bytes = colltune_call_bytes(call);
    if (bytes < 0)
        return d;
    d.mode = CT_MODE_PROFILE;
    int nodes = 0, ppn = 0;
    if (ct_prof_layouts[call->coll])   /* the communicator's own layout */
        ct_commlayout_of(call->comm, &nodes, &ppn);
    d.chosen = ct_profile_lookup_layout(ct_prof, call->coll, size, nodes, ppn, bytes);
    return d;
}

ct_decision ct_decide(const ct_call *call)
{
    ct_decision d = {-1, -1, CT_MODE_NONE, COLLTUNE_APPLICABLE};
    switch (ct_route[call->coll]) {
    case CT_ROUTE_FORCE:
        d.mode = CT_MODE_FORCE;
        d.chosen = ct_force[call->coll];
        break;
    case CT_ROUTE_PROFILE:
        d = ct_ask_profile(call);
        break;
    case CT_ROUTE_LEARN:
    case CT_ROUTE_LEARN_FAST:
        d = ct_learn_decide(call);
        break;
    default:
        break;
    }
    if (d.chosen >= 0 && d.variant < 0 && d.reason == COLLTUNE_APPLICABLE) {   /* learn: done */
        d.reason = ct_member_applicable(d.chosen, call);
        if (d.reason == COLLTUNE_APPLICABLE)
            d.variant = d.chosen;
    }
    return d;
}

/* The null handles, negative counts and out-of-range roots that the library reports as errors
 * (MPI_ERR_TYPE, MPI_ERR_COUNT, ...). Such calls go to the library untouched so that the caller gets
 * the library's error through the communicator's error handler: the decision path's own queries
 * (PMPI_Type_size of MPI_DATATYPE_NULL, ...) would raise it on MPI_COMM_WORLD's handler
 * instead, which aborts even where the application asked for MPI_ERRORS_RETURN. Only arguments
 * significant on this rank are checked (a non-root may pass MPI_DATATYPE_NULL as Gather's
 * recvtype). Invalid non-null handles cannot be detected in MPI. */
/* The root of a rooted collective: -1 erroneous, 0 valid and not this rank, 1 this rank, 2 an
 * inter-communicator (roots mean something else there: not checked). Out of line: the queries
 * need a stack frame that the other collectives' calls should not pay for. */
static __attribute__((noinline)) int ct_root_check(const ct_call *call)
{
    int inter, size, rank;
    if (PMPI_Comm_test_inter(call->comm, &inter) != MPI_SUCCESS)
        return -1;
    if (inter)
        return 2;
    if (PMPI_Comm_size(call->comm, &size) != MPI_SUCCESS
        || PMPI_Comm_rank(call->comm, &rank) != MPI_SUCCESS)
        return -1;
    if (call->root < 0 || call->root >= size)
        return -1;
    return rank == call->root;
}

static int ct_erroneous(const ct_call *call)
{
    const ct_collective_info *info = &ct_collectives[call->coll];
    if (call->comm == MPI_COMM_NULL)
        return 1;
    if (info->has_op && call->op == MPI_OP_NULL)
        return 1;
    int is_root = 0;
    if (info->has_root) {
        is_root = ct_root_check(call);
        if (is_root < 0)
            return 1;
        if (is_root == 2)
            return 0;
    }
    return ct_args_erroneous(call, is_root);
}

/* The counting table's record of a decided call: its outcome, and its bytes for the functions
 * section (watch.c: the v/w forms' counts summed, where the decision's figure is 0). */
static void ct_count_call(const ct_call *call, const ct_decision *d)
{
    ct_count_decision(call->coll, d);
    ct_fn_coll_bytes(call->coll, ct_watch_call_bytes(call));
}

/* Every route but the learning mode's own: decide, count, run. Out of line so that the learning
 * mode's calls do not pay for its stack frame. */
static __attribute__((noinline)) int ct_dispatch_decided(const ct_call *call)
{
    ct_decision d = ct_decide(call);
    if (CT_UNLIKELY(d.variant >= CT_LIB_BASE)) {   /* counted after: the library may refuse it */
        /* traced only if the learning mode decided: its record of the call is then prepared */
        int rc = d.mode >= CT_MODE_EXPLORE && ct_learn_tracing() ? ct_learn_run_traced(call, &d)
                                                                  : ct_libalg_run(call, &d);
        if (ct_counting)
            ct_count_call(call, &d);
        return rc;
    }
    if (ct_counting)
        ct_count_call(call, &d);
    if (d.mode >= CT_MODE_EXPLORE && ct_learn_tracing())
        return ct_learn_run_traced(call, &d);
    if (d.variant >= 0)
        return colltune_invoke(d.variant, call);
    return colltune_invoke_library(call);
}

int ct_dispatch(const ct_call *call)
{
    /* learn.c checks erroneous calls itself, from the communicator's cached size and rank */
    if (ct_route[call->coll] == CT_ROUTE_LEARN_FAST)
        return ct_learn_dispatch(call);
    if (CT_UNLIKELY(ct_erroneous(call))) {
        ct_count_passthrough(call->coll, COLLTUNE_NA_ERROR);
        return colltune_invoke_library(call);
    }
    if (CT_UNLIKELY(ct_warmup_calls != 0) && ct_warmup_pass(call)) {
        if (ct_route[call->coll] == CT_ROUTE_LEARN)
            ct_learn_warmup_call(call->comm);
        ct_count_passthrough(call->coll, COLLTUNE_NA_WARMUP);
        return colltune_invoke_library(call);
    }
    return ct_dispatch_decided(call);
}

/* Whether the learning mode decides MPI_I<coll> (`form` nonblocking) or MPI_<Coll>_init
 * (persistent): it decides the blocking calls of the collective (no force, no profile) and the
 * form's portfolio may serve (learn.c). */
static int ct_learns_form(enum ct_form form, int coll)
{
    return (form == CT_FORM_PERSISTENT ? ct_learn_persistent : ct_learn_nonblocking)
           && (ct_route[coll] == CT_ROUTE_LEARN || ct_route[coll] == CT_ROUTE_LEARN_FAST);
}

static int ct_learns_started(int coll)
{
    return ct_learns_form(CT_FORM_NONBLOCKING, coll);
}

/* A started call the learning mode decides; counted under a library member only (the library's
 * own call is in the functions section, not among the blocking calls' decisions). */
static int ct_learned_start(enum ct_form form, const ct_call *call, MPI_Info info,
                            MPI_Request *request)
{
    ct_decision d = {-1, -1, CT_MODE_NONE, COLLTUNE_APPLICABLE};
    int rc = ct_learn_started(form, call, info, request, &d);
    if (ct_counting && d.chosen >= CT_LIB_BASE)
        ct_count_decision(call->coll, &d);
    return rc;
}

/* A nonblocking or persistent call (MPI_I<coll>, MPI_<Coll>_init) of a row whose form has a
 * forced member, or that the learning mode decides: the member's algorithm if it may serve the
 * call (applicable, proven for that form), else the library's. Nothing waits here: the call is only started (or its request
 * initialized), as the application asked. The library's warm-up is not counted: it counts the
 * blocking calls MPICH's node-level layer sees. */
/* The profile's member for a started call (its `<coll>#<form>` section), or -1: the library.
 * Local queries only (the communicator's size, the row's uniform bytes): nothing here may wait
 * for another rank. */
static int ct_profile_started(enum ct_form form, const ct_call *call)
{
    int size;
    if (call->comm == MPI_COMM_NULL || PMPI_Comm_size(call->comm, &size) != MPI_SUCCESS)
        return -1;
    int64_t bytes = colltune_call_bytes(call);
    return bytes < 0 ? -1 : ct_profile_lookup_form(ct_prof, (int)form, call->coll, size, bytes);
}

static int ct_dispatch_form(enum ct_form form, const ct_call *call, MPI_Info info,
                            MPI_Request *request)
{
    int id = ct_force[form * CT_NUM_COLLECTIVES + call->coll];
    int mode = CT_MODE_FORCE;
    if (id == CT_FORCE_UNSET && ct_prof_started[form * CT_NUM_COLLECTIVES + call->coll]) {
        /* the profile's opinion (modes' order: force, profile, learning); erroneous calls
         * first, whose size queries would raise the error on MPI_COMM_WORLD */
        if (CT_UNLIKELY(ct_erroneous(call)))
            return ct_start_library(form, call, info, request);
        id = ct_profile_started(form, call);
        mode = CT_MODE_PROFILE;
    }
    if (id == CT_FORCE_UNSET && ct_learns_form(form, call->coll))
        return ct_learned_start(form, call, info, request);
    if (id < CT_LIB_BASE)
        return ct_start_library(form, call, info, request);
    /* counted under the member, apart from the blocking calls (count.c); served as the
     * learning mode serves its members of these forms: ct_libalg_start */
    ct_decision d = {-1, id, mode, COLLTUNE_NA_ERROR};
    if (CT_LIKELY(!ct_erroneous(call)))
        d.reason = ct_member_applicable(id, call);
    int rc = MPI_SUCCESS;
    if (d.reason == COLLTUNE_APPLICABLE) {
        d.variant = id;
        rc = ct_libalg_start(call, &d, info, request);
    }
    if (d.variant != id)   /* not applicable, or no member of this form (ct_libalg_start) */
        rc = ct_start_library(form, call, info, request);
    if (ct_counting)
        ct_count_decision(call->coll, &d);
    return rc;
}

int ct_dispatch_started(const ct_call *call, MPI_Request *request)
{
    if (CT_LIKELY(ct_learned_starts[call->coll]))
        return ct_learn_dispatch_started(call, request);
    return ct_dispatch_form(CT_FORM_NONBLOCKING, call, MPI_INFO_NULL, request);
}

int ct_dispatch_init(const ct_call *call, MPI_Info info, MPI_Request *request)
{
    return ct_dispatch_form(CT_FORM_PERSISTENT, call, info, request);
}

void ct_count_passthrough(int coll, colltune_reason reason)
{
    if (!ct_counting)
        return;
    ct_decision d = {-1, -1, CT_MODE_NONE, reason};
    ct_count_decision(coll, &d);
}

void ct_modes_install(const int force[CT_FORCE_SLOTS], ct_profile *profile, int learning,
                      int counting)
{
    ct_force_started_any = 0;
    for (int c = CT_NUM_COLLECTIVES; c < CT_FORCE_SLOTS; c++) {
        ct_force[c] = force[c];
        ct_force_started_any |= force[c] >= CT_LIB_BASE;
    }
    ct_prof = profile;
    ct_counting = counting;
    ct_watch = counting ? CT_WATCH_SEE : 0;   /* the profiling mode sets it too (profrun.c) */
    if (ct_profile_has_layouts(profile, -1))
        ct_commlayout_start();
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++)
        ct_prof_layouts[c] = (unsigned char)ct_profile_has_layouts(profile, c);
    ct_prof_started_any = 0;
    for (int c = CT_NUM_COLLECTIVES; c < CT_FORCE_SLOTS; c++) {
        ct_prof_started[c] = (unsigned char)ct_profile_has_form(profile, c / CT_NUM_COLLECTIVES,
                                                                c % CT_NUM_COLLECTIVES);
        ct_prof_started_any |= ct_prof_started[c];
    }
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        ct_force[c] = force[c];
        ct_route[c] = force[c] != CT_FORCE_UNSET ? CT_ROUTE_FORCE
                      : profile != NULL          ? CT_ROUTE_PROFILE
                      : learning && counting     ? CT_ROUTE_LEARN
                      : learning                 ? CT_ROUTE_LEARN_FAST
                                                 : CT_ROUTE_NONE;
        /* The profile may name any collective; counting wants to see all of them. */
        ct_active[c] = (unsigned char)(force[c] != CT_FORCE_UNSET || profile != NULL || learning
                                       || counting);
    }
}

void ct_modes_watch_started(void)
{
    int learns = 0;
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        learns |= ct_learns_started(c) | ct_learns_form(CT_FORM_PERSISTENT, c);
        ct_learned_starts[c] = (unsigned char)(ct_learns_started(c) && ct_route[c] == CT_ROUTE_LEARN_FAST
                                               && ct_force[CT_FORM_NONBLOCKING * CT_NUM_COLLECTIVES + c]
                                                      == CT_FORCE_UNSET);
    }
    /* requests followed only where a reward is recorded: the decision needs nothing at the end */
    if (learns && ct_learn_tracing())
        ct_watch |= CT_WATCH_LEARN;
    ct_start_watch = (unsigned char)((ct_watch & CT_WATCH_SEE ? CT_START_SEE : 0)
                                     | (ct_force_started_any || ct_prof_started_any || learns
                                            ? CT_START_SERVE : 0));
    ct_polls_watch_written();
}

const char *colltune_route_name(int coll)
{
    static const char *const names[][2] = {
        [CT_ROUTE_NONE] = {"counting", "profiling+counting"},
        [CT_ROUTE_FORCE] = {"force", "profiling+force"},
        [CT_ROUTE_PROFILE] = {"profile", "profiling+profile"},
        [CT_ROUTE_LEARN] = {"learning", "profiling+learning"},
        [CT_ROUTE_LEARN_FAST] = {"learning-only", "profiling+learning-only"},
    };
    if (coll < 0 || coll >= CT_NUM_COLLECTIVES)
        return NULL;
    /* The profiling mode activates every wrapper (ct_active) and times whoever serves the
     * call: the library directly unless another mode serves it (profcall.c). */
    int profiling = ct_profrun_on != 0;
    if (profiling ? !ct_profrun_served(coll) : !ct_active[coll])
        return profiling ? "profiling" : "pass-through";
    return names[ct_route[coll]][profiling];
}

int colltune_learn_recording(void)
{
    return ct_learn_tracing();
}

void ct_modes_clear(void)
{
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
        ct_active[c] = 0;
        ct_route[c] = CT_ROUTE_NONE;
        ct_force[c] = CT_FORCE_UNSET;
        ct_prof_layouts[c] = 0;
        ct_learned_starts[c] = 0;
    }
    ct_prof = NULL;
    for (int c = CT_NUM_COLLECTIVES; c < CT_FORCE_SLOTS; c++) {
        ct_force[c] = CT_FORCE_UNSET;
        ct_prof_started[c] = 0;
    }
    ct_force_started_any = ct_prof_started_any = 0;
    ct_counting = 0;
    ct_watch = 0;
    ct_polls_watch_written();
    ct_start_watch = 0;
    ct_req_clear();
    ct_commlayout_stop();
}

/* ---- COLLTUNE_FORCE ------------------------------------------------------------------------ */

static void ct_trim(char **begin, char **end)
{
    while (*begin < *end && isspace((unsigned char)**begin))
        (*begin)++;
    while (*end > *begin && isspace((unsigned char)(*end)[-1]))
        (*end)--;
}

static void ct_list_collectives(char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < CT_NUM_COLLECTIVES && used < len; c++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", c ? ", " : "",
                                 colltune_collective_name(c));
}

static void ct_list_variants(int coll, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int v = 0; v < CT_NUM_VARIANTS && used < len; v++)
        if (colltune_variant_collective(v) == coll)
            used += (size_t)snprintf(out + used, len - used, "%s, ", colltune_variant_name(v));
    for (int id = CT_LIB_BASE; id < CT_LIB_BASE + CT_LIB_MAX && used < len; id++)
        if (ct_libalg_collective(id) == coll)
            used += (size_t)snprintf(out + used, len - used, "%s, ", ct_libalg_name(id));
    if (used < len)
        snprintf(out + used, len - used, "library");
}

/* A variant of the catalog or, `lib:<coll>:<alg>[#nonblocking|#persistent]`, an algorithm of
 * the running library (of that form). */
static int ct_force_member(const char *name)
{
    return strncmp(name, "lib:", 4) == 0 ? ct_libalg_find(name) : colltune_variant_index(name);
}

/* One `key=value` entry, [b, e) without blanks around it. */
static int ct_force_entry(char *b, char *e, int force[CT_FORCE_SLOTS], char *err,
                          size_t errlen)
{
    char choices[1024];
    char *eq = memchr(b, '=', (size_t)(e - b));
    if (eq == NULL) {
        snprintf(err, errlen, "COLLTUNE_FORCE: entry '%.*s' is not collective=variant", (int)(e - b), b);
        return -1;
    }
    char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
    ct_trim(&kb, &ke);
    ct_trim(&vb, &ve);
    *ke = '\0';
    *ve = '\0';
    int coll = colltune_collective_index(kb);
    if (coll < 0) {
        ct_list_collectives(choices, sizeof choices);
        snprintf(err, errlen, "COLLTUNE_FORCE: unknown collective '%s'; valid collectives: %s",
                 kb, choices);
        return -1;
    }
    /* `library` by its name only: an unknown member is -1 too, which is CT_FORCE_LIBRARY */
    int library = strcmp(vb, "library") == 0;
    int var = library ? CT_FORCE_LIBRARY : ct_force_member(vb);
    /* a member of the nonblocking (persistent) form is forced on MPI_I<coll> (MPI_<Coll>_init),
     * its own slot */
    static const char *const of_form[] = {"", " with a member of the nonblocking form",
                                          " with a member of the persistent form"};
    int form = ct_libalg_form(var);
    int slot = form * CT_NUM_COLLECTIVES + coll;
    if (force[slot] != CT_FORCE_UNSET) {
        snprintf(err, errlen, "COLLTUNE_FORCE: collective '%s' is given twice%s", kb, of_form[form]);
        return -1;
    }
    if (library) {
        force[coll] = CT_FORCE_LIBRARY;
        return 0;
    }
    int of = var < 0 ? -1 : var >= CT_LIB_BASE ? ct_libalg_collective(var)
                                               : colltune_variant_collective(var);
    if (var < 0 || of != coll) {
        const char *note = strncmp(vb, "lib:", 4) == 0 ? ct_libalg_note() : NULL;
        ct_list_variants(coll, choices, sizeof choices);
        snprintf(err, errlen, "COLLTUNE_FORCE: %s '%s' for %s; valid choices for %s: %s%s%s%s",
                 var < 0 ? "unknown variant" : "variant of another collective", vb, kb, kb,
                 choices, note ? " (no library algorithm can be forced here: " : "",
                 note ? note : "", note ? ")" : "");
        return -1;
    }
    force[slot] = var;
    return 0;
}

int ct_force_parse(const char *text, int force[CT_FORCE_SLOTS], char *err, size_t errlen)
{
    for (int c = 0; c < CT_FORCE_SLOTS; c++)
        force[c] = CT_FORCE_UNSET;
    if (text == NULL)
        return 0;
    char *copy = strdup(text);
    if (copy == NULL) {
        snprintf(err, errlen, "COLLTUNE_FORCE: out of memory");
        return -1;
    }
    int rc = 0;
    char *entry = copy;
    while (rc == 0 && entry != NULL) {
        char *comma = strchr(entry, ',');
        char *end = comma ? comma : entry + strlen(entry);
        char *b = entry;
        ct_trim(&b, &end);
        if (b < end)        /* empty entries (a trailing comma) are harmless */
            rc = ct_force_entry(b, end, force, err, errlen);
        entry = comma ? comma + 1 : NULL;
    }
    free(copy);
    return rc;
}

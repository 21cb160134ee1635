/*
 * The library's own algorithms as members of the learning mode's portfolio (docs/select.md,
 * "Library members"): `lib:<collective>:<algorithm>`, named as the measurement driver names them.
 *
 * At MPI_Init (ct_libalg_setup) the algorithms the library lists through MPI_T are registered
 * with the table parser, after the mock-ups. A drawn library member runs as follows:
 *  - MPICH reads MPIR_CVAR_<COLL>_INTRA_ALGORITHM on every call: the value is written just
 *    before the call and the library's value just after (so `default` stays the library's own
 *    choice), with MPIR_CVAR_DEVICE_COLLECTIVES=none (device collectives would override the
 *    choice) and MPIR_CVAR_COLLECTIVE_FALLBACK=error, under MPI_ERRORS_RETURN: an algorithm
 *    that cannot serve the call is refused by checks on uniform arguments before any message
 *    moves, on every rank alike, and the call is made again by the library's own choice and
 *    counted `not-applicable:refused`. Without that the library would silently run its default
 *    under the member's name. The variables are process-wide (scope ALL_EQ, written identically
 *    on all ranks since the draw is).
 *  - Open MPI copies coll_tuned_<coll>_algorithm into a communicator when it creates one: the
 *    member gets a communicator of its own, made with the variable set (and dynamic rules on)
 *    by PMPI_Comm_create over the parent's group (collective over the parent, like the call it
 *    is made in: the draw is uniform, so every rank reaches it at the same call; no attribute
 *    copy callbacks of the application run, unlike a dup). It is cached per (parent, member) in
 *    the parent's learning-mode attribute (its per-thread cache makes the lookup nearly free),
 *    or, when only COLLTUNE_FORCE names members, in an attribute of its own; freed with the
 *    parent or at MPI_Finalize, and gets MPI_ERRORS_RETURN: a refusal (two_proc on 3 ranks)
 *    falls back like MPICH's.
 *  - The nonblocking form (`lib:<coll>:<alg>#nonblocking`, COLLTUNE_FORCE and the learning
 *    mode's nonblocking portfolios: modes.c, learn.c): both
 *    libraries read MPIR_CVAR_I<COLL>_INTRA_ALGORITHM / coll_libnbc_i<coll>_algorithm when
 *    MPI_I<coll> builds its schedule, so it is written before the call and restored after, as
 *    MPICH's blocking variables are; the call's algorithm is fixed when it starts and its
 *    completion (the application's Wait/Test) needs nothing from us.
 *  - The persistent form (`lib:<coll>:<alg>#persistent`, COLLTUNE_FORCE only): both libraries
 *    build a persistent request's schedule in MPI_<Coll>_init from the same variable (Open MPI's
 *    persistent collectives are libnbc's, MPICH's are its nonblocking schedules), so it is
 *    written around the init call only; MPI_Start/MPI_Startall replay that schedule and pass
 *    through untouched.
 *  - Intel MPI fixes algorithms per launch (I_MPI_ADJUST_*, its MPI_T writes do nothing): no
 *    library members there.
 * Library members are off under MPI_THREAD_MULTIPLE: the variables are process-wide, so a
 * concurrent collective (or communicator creation) on another thread would see the member's
 * algorithm on some ranks and not on others, and hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ct_core.h"
#include "ct_libalg.h"
#include "ct_mpit.h"
#include "ct_runtime.h"
#include "ct_select.h"

enum { CT_LIB_NONE, CT_LIB_MPICH, CT_LIB_OPENMPI };

typedef struct ct_lib_member {
    int coll, value;
    int ring;            /* MPICH's MPI_Allgatherv ring: ct_ring_fits */
    enum ct_form form;   /* the calls it serves: MPI_<Coll>, MPI_I<coll> or MPI_<Coll>_init */
    char name[CT_SELECT_LIB_NAME];
} ct_lib_member;

/* The communicators made for library members on one parent (Open MPI), in a list of all such
 * caches so that MPI_Finalize can free what the application never freed. */
typedef struct ct_lib_cache {
    struct ct_lib_cache *prev, *next;
    void **owner;                    /* the parent's learning-mode slot, or NULL: own attribute */
    MPI_Comm parent;
    MPI_Comm comm[CT_LIB_MAX];
    unsigned char state[CT_LIB_MAX]; /* 0 not made yet, 1 made, 2 could not be made */
} ct_lib_cache;

static int ct_kind, ct_mpit_up;
static ct_lib_member ct_members[CT_LIB_MAX];
static int ct_nmembers;
/* The variables a member writes and restores (core/mpit.c): the algorithm variable of each
 * collective; MPICH's device collectives (forced `none`) and fallback (forced `error`); Open
 * MPI's dynamic rules (forced on) and coll/han priority (forced 0). */
static ct_mpit_var ct_alg[CT_NUM_COLLECTIVES];
/* The nonblocking form's variable of each collective (MPICH MPIR_CVAR_I<COLL>_INTRA_ALGORITHM,
 * Open MPI coll_libnbc_i<coll>_algorithm): both libraries read it when a call starts or a
 * persistent request is initialized, so it is written just before MPI_I<coll> or
 * MPI_<Coll>_init and restored just after, for Open MPI too. */
static ct_mpit_var ct_alg_started[CT_NUM_COLLECTIVES];
static ct_mpit_var ct_device, ct_fallback, ct_dynamic, ct_han;
static ct_lib_cache ct_caches = {&ct_caches, &ct_caches, NULL, MPI_COMM_NULL, {0}, {0}};
static int ct_lib_keyval = MPI_KEYVAL_INVALID;   /* caches outside the learning mode */
static const char *ct_note;                      /* why there are no members, or NULL */

#define CT_OMPI4_NOTE                                                                          \
    "coll_tuned_use_dynamic_rules is read-only through MPI_T here (Open MPI before 5.0): launch " \
    "with OMPI_MCA_coll_tuned_use_dynamic_rules=1 to offer the library's algorithms as members"

static int ct_read_only;  /* algorithm variables found but refused a write (Open MPI 4.x) */

static int ct_skipped(int coll, const char *name, int value, enum ct_form form)
{
    if (form != CT_FORM_BLOCKING)
        return ct_libalg_skipped_started(ct_kind == CT_LIB_MPICH, name, value);
    return ct_libalg_skipped(ct_kind == CT_LIB_MPICH, colltune_collective_name(coll), name, value);
}

/* The algorithms of collective `coll`'s variable `index` as members of `form` (the nonblocking
 * and persistent forms share the nonblocking form's variable, opened once), each registered in
 * its form's portfolio of the selection table's parser. */
static void ct_register(int coll, int index, enum ct_form form)
{
    static const char *const suffix[] = {"", "#nonblocking", "#persistent"};
    char names[CT_SELECT_MAX_LIB * 2][CT_MPIT_NAME];
    int values[CT_SELECT_MAX_LIB * 2];
    ct_mpit_var *var = form != CT_FORM_BLOCKING ? &ct_alg_started[coll] : &ct_alg[coll];
    /* usable only if it takes a write: a read-only variable (Open MPI 4.1) offers no member,
     * rather than one failing every drawn call */
    if (form != CT_FORM_PERSISTENT && ct_mpit_var_open(var, index, NULL) != MPI_SUCCESS)
        ct_read_only++;
    if (!var->present)
        return;
    int n = ct_mpit_list(index, names, values, CT_SELECT_MAX_LIB * 2);
    for (int i = 0; i < n && ct_nmembers < CT_LIB_MAX; i++) {
        ct_lib_member *m = &ct_members[ct_nmembers];
        if (ct_skipped(coll, names[i], values[i], form))
            continue;
        m->coll = coll;
        m->value = values[i];
        m->form = form;
        m->ring = ct_kind == CT_LIB_MPICH && coll == CT_COLL_ALLGATHERV
                  && (strcmp(names[i], "ring") == 0 || strcmp(names[i], "sched_ring") == 0);
        snprintf(m->name, sizeof m->name, "lib:%s:%s%s", colltune_collective_name(coll), names[i],
                 suffix[form]);
        /* the learning mode's portfolios: blocking calls, MPI_I<coll>, MPI_<Coll>_init; a member
         * of a started form that finds its portfolio full can still be forced */
        int port = (int)form * CT_NUM_COLLECTIVES + coll;
        int listed = ct_select_add_library(port, m->name, CT_LIB_BASE + ct_nmembers) == 0;
        if (form != CT_FORM_BLOCKING || listed)
            ct_nmembers++;
    }
}

/* Open MPI before 5.0 refuses MPI_T writes of coll_tuned_use_dynamic_rules (ct_mpit_dynamic_rules),
 * so it offers members only when the launch turned dynamic rules on; and its MPI_T_init_thread
 * opens every MCA component to register their variables: 0.22 s of MPI_Init on this machine
 * (Debian's 4.1.4, benchmarks/learning_runtime), paid by every learning run, even one whose table
 * was refused. So MPI_T is not started there unless the launch set the switch (`--mca` reaches
 * the ranks as this variable; an MCA parameter file is not looked at). */
static int ct_openmpi_static_rules(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, major = 0;
    if (PMPI_Get_library_version(version, &len) != MPI_SUCCESS
        || sscanf(version, "Open MPI v%d", &major) != 1 || major >= 5)
        return 0;
    const char *on = getenv("OMPI_MCA_coll_tuned_use_dynamic_rules");
    return on == NULL || strcmp(on, "") == 0 || strcmp(on, "0") == 0 || strcasecmp(on, "false") == 0
           || strcasecmp(on, "no") == 0;
}

uint64_t ct_libalg_setup(void)
{
    int level = MPI_THREAD_SINGLE, provided;
    const char *note = NULL;
    ct_kind = CT_LIB_NONE;
    ct_nmembers = 0;
    ct_read_only = 0;
    PMPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE)
        note = "library algorithms are not online members under MPI_THREAD_MULTIPLE (their "
               "settings are process-wide)";
    else if (ct_mpit_intel())
        note = "Intel MPI fixes its algorithms per launch (I_MPI_ADJUST_*), not per call";
    else if (ct_openmpi_static_rules())
        note = CT_OMPI4_NOTE;
    else if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        note = "MPI_T is unavailable, so no library algorithm can be chosen per call";
    ct_select_clear_library(note);
    ct_note = note;
    if (note != NULL)
        return 0;
    ct_mpit_up = 1;
#ifdef COLLTUNE_ABI_FAMILY_OPENMPI
    ct_kind = CT_LIB_OPENMPI;
#else
    ct_kind = CT_LIB_MPICH;
#endif
    /* The algorithm variable of every collective, the companions, then the variable of every
     * collective's nonblocking form (rows without that form ask for one no library has), found
     * in one pass. */
    enum { C = CT_NUM_COLLECTIVES };
    char text[2 * C][96];
    const char *names[2 * C + 2];
    int index[2 * C + 2];
    for (int c = 0; c < C; c++) {
        char upper[64];
        const char *coll = colltune_collective_name(c);
        ct_mpit_upper(upper, coll, sizeof upper);
        int nonblocking = (ct_collectives[c].forms & CT_ROW_NONBLOCKING) != 0;
        if (ct_kind == CT_LIB_OPENMPI) {
            snprintf(text[c], sizeof text[c], "coll_tuned_%s_algorithm", coll);
            snprintf(text[C + c], sizeof text[C + c], "coll_libnbc_i%s_algorithm", coll);
        } else {
            snprintf(text[c], sizeof text[c], "MPIR_CVAR_%s_INTRA_ALGORITHM", upper);
            snprintf(text[C + c], sizeof text[C + c], "MPIR_CVAR_I%s_INTRA_ALGORITHM", upper);
        }
        if (!nonblocking)
            text[C + c][0] = '\0';
        names[c] = text[c];
        names[C + 2 + c] = text[C + c];
    }
    names[C] = ct_kind == CT_LIB_OPENMPI ? "coll_tuned_use_dynamic_rules"
                                         : "MPIR_CVAR_DEVICE_COLLECTIVES";
    names[C + 1] = ct_kind == CT_LIB_OPENMPI ? "" : "MPIR_CVAR_COLLECTIVE_FALLBACK";
    ct_mpit_find_all(names, 2 * C + 2, index);
    if (ct_kind == CT_LIB_OPENMPI) {
        if (!ct_mpit_dynamic_rules(&ct_dynamic)) {
            ct_select_clear_library(ct_note = CT_OMPI4_NOTE);
            return 0;
        }
        ct_mpit_han(&ct_han);   /* members on several nodes: docs/cluster.md */
    } else {
        ct_mpit_var_open(&ct_device, index[C], "none");
        ct_mpit_var_open(&ct_fallback, index[C + 1], "error");
    }
    for (int c = 0; c < C; c++)
        ct_register(c, index[c], CT_FORM_BLOCKING);
    for (int c = 0; c < C; c++)
        ct_register(c, index[C + 2 + c], CT_FORM_NONBLOCKING);
    for (int c = 0; c < C && CT_HAVE_PERSISTENT; c++)
        if (ct_collectives[c].forms & CT_ROW_PERSISTENT)
            ct_register(c, index[C + 2 + c], CT_FORM_PERSISTENT);
    int blocking = 0;   /* the selection table's members (Open MPI without coll/tuned: libnbc's only) */
    for (int k = 0; k < ct_nmembers; k++)
        blocking += ct_members[k].form == CT_FORM_BLOCKING;
    if (blocking == 0)
        ct_select_clear_library(ct_note = ct_read_only > 0
            ? "this library's algorithm control variables are read-only through MPI_T (Open MPI "
              "before 5.0): its algorithms can be chosen only at launch"
            : ct_nmembers > 0 ? "this library lists no algorithm control variables in MPI_T for "
                                "the blocking collectives"
            : "this library lists no algorithm control variables in MPI_T");
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < ct_nmembers; i++)
        for (const char *p = ct_members[i].name; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

const char *ct_libalg_name(int id)
{
    return id >= CT_LIB_BASE && id < CT_LIB_BASE + ct_nmembers ? ct_members[id - CT_LIB_BASE].name
                                                              : "?";
}

const char *ct_member_name(int id)
{
    return id >= CT_LIB_BASE ? ct_libalg_name(id) : colltune_variant_name(id);
}

int ct_libalg_find(const char *name)
{
    for (int k = 0; k < ct_nmembers; k++)
        if (strcmp(ct_members[k].name, name) == 0)
            return CT_LIB_BASE + k;
    return -1;
}

const char *ct_libalg_note(void)
{
    return ct_note;
}

int ct_libalg_collective(int id)
{
    return id >= CT_LIB_BASE && id < CT_LIB_BASE + ct_nmembers ? ct_members[id - CT_LIB_BASE].coll
                                                              : -1;
}

/* From uniform arguments only. A forced algorithm of Open MPI's coll/tuned is not checked
 * against the operation: ring allreduce with a non-commutative op gives another result than the
 * library's choice (tests/programs/ct_collectives.c); MPICH refuses most such calls itself, but
 * a reordered non-commutative reduction is never worth the risk. An in-place Reduce_scatter(_block)
 * leaves the receive buffer past the caller's block untouched under the library's choice
 * (mpi4py relies on it), not under Open MPI's non-overlapping or MPICH's pairwise. */
/* MPICH's MPI_Allgatherv ring (blocking `ring`, started and persistent `sched_ring`) cuts blocks
 * in chunks counted in each rank's own extent, so layouts of one signature that differ between
 * ranks make it fail ("Message truncated") or hang (benchmarks/proof/allgatherv_layouts.c). The
 * application's own call meets it only where MPICH's selection picks the ring (T = sum(recvcounts)
 * x type size bytes from 512 KiB on 2^k ranks, 80 KiB on others); the member serves only there,
 * where it changes nothing an application could see. T is the same on every rank. A launch that
 * moved MPICH's own choice (colltune_mpich_ring_settings: an algorithm or a tuning file) leaves
 * no size where the ring is known to be that choice: the member serves nothing then. */
static colltune_reason ct_ring_fits(const ct_call *call)
{
    int p, inter;
    int64_t elem, total = 0;
    if (colltune_mpich_ring_setting() != NULL)
        return COLLTUNE_NA_SETTING;
    if (PMPI_Comm_test_inter(call->comm, &inter) != MPI_SUCCESS)
        return COLLTUNE_NA_ERROR;
    if (inter)   /* its recvcounts has the remote group's size: the library serves it */
        return COLLTUNE_NA_INTERCOMM;
    if (PMPI_Comm_size(call->comm, &p) != MPI_SUCCESS || ct_type_size(call->recvtype, &elem)
        != MPI_SUCCESS)
        return COLLTUNE_NA_ERROR;
    for (int i = 0; i < p; i++)
        total += call->recvcounts[i];
    return colltune_mpich_allgatherv_ring(p, total * elem) ? COLLTUNE_APPLICABLE
                                                           : COLLTUNE_NA_SIZE;
}

colltune_reason ct_libalg_applicable(int id, const ct_call *call)
{
    int commutative = 1;
    if (id < CT_LIB_BASE || id >= CT_LIB_BASE + ct_nmembers)
        return COLLTUNE_NA_ERROR;
    if (ct_members[id - CT_LIB_BASE].form != CT_FORM_BLOCKING) {
        /* the variables choose among intra-communicator algorithms: on an intercommunicator the
         * library would run its own under the member's name */
        int inter = 1;
        if (PMPI_Comm_test_inter(call->comm, &inter) != MPI_SUCCESS)
            return COLLTUNE_NA_ERROR;
        if (inter)
            return COLLTUNE_NA_INTERCOMM;
    }
    if ((call->coll == CT_COLL_REDUCE_SCATTER || call->coll == CT_COLL_REDUCE_SCATTER_BLOCK)
        && call->sendbuf == MPI_IN_PLACE)
        return COLLTUNE_NA_IN_PLACE;
    if (CT_UNLIKELY(ct_members[id - CT_LIB_BASE].ring)) {
        colltune_reason reason = ct_ring_fits(call);
        if (reason != COLLTUNE_APPLICABLE)
            return reason;
    }
    if (ct_collectives[call->coll].has_op
        && PMPI_Op_commutative(call->op, &commutative) != MPI_SUCCESS)
        return COLLTUNE_NA_ERROR;
    return commutative ? COLLTUNE_APPLICABLE : COLLTUNE_NA_NONCOMMUTATIVE;
}

/* ---- running a member ---------------------------------------------------------------------- */

/* Errors of `comm` returned rather than raised while a member is tried; *saved gets the
 * application's handler back (ct_loud). */
static int ct_quiet(MPI_Comm comm, MPI_Errhandler *saved)
{
    int rc = PMPI_Comm_get_errhandler(comm, saved);
    return rc == MPI_SUCCESS ? PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN) : rc;
}

static int ct_loud(MPI_Comm comm, MPI_Errhandler *saved)
{
    int rc = PMPI_Comm_set_errhandler(comm, *saved);
    PMPI_Errhandler_free(saved);
    return rc;
}

/* The library's call of the member's form: blocking, started (MPI_I<coll>) or a persistent
 * request initialized (MPI_<Coll>_init with `info`). */
static int ct_library(const ct_lib_member *m, const ct_call *call, MPI_Info info,
                      MPI_Request *request)
{
    return m->form == CT_FORM_NONBLOCKING ? colltune_start_library(call, request)
           : m->form == CT_FORM_PERSISTENT ? colltune_init_library(call, info, request)
                                           : colltune_invoke_library(call);
}

/* A member whose variable the library reads on every call (MPICH; the nonblocking and
 * persistent forms of both): written just before the call, the library's values back just
 * after. */
static int ct_each_call_run(const ct_lib_member *m, const ct_call *call, ct_decision *d,
                            MPI_Info info, MPI_Request *request)
{
    ct_mpit_var *alg = m->form != CT_FORM_BLOCKING ? &ct_alg_started[m->coll] : &ct_alg[m->coll];
    MPI_Errhandler saved;
    int rc = ct_quiet(call->comm, &saved), ran = 0;
    if (rc == MPI_SUCCESS) {
        rc = ct_mpit_var_set(alg, m->value);
        if (rc == MPI_SUCCESS)
            rc = ct_mpit_var_force(&ct_device);
        /* MPICH 5.0.2 leaks a persistent request whose init it refused, and may then abort in
         * MPI_Finalize (nbcutil.c:72): the persistent form keeps the library's fallback, which
         * replaces an unusable algorithm by its own choice (the library's bits, counted under
         * the member) */
        if (rc == MPI_SUCCESS && m->form != CT_FORM_PERSISTENT)
            rc = ct_mpit_var_force(&ct_fallback);
        if (rc == MPI_SUCCESS) {
            ran = 1;
            rc = ct_library(m, call, info, request);
        }
        /* The library's own values back before anything else can run. */
        int back = ct_mpit_var_restore(alg) | ct_mpit_var_restore(&ct_device)
                   | ct_mpit_var_restore(&ct_fallback);
        back |= ct_loud(call->comm, &saved);
        if (rc == MPI_SUCCESS && back != MPI_SUCCESS)
            d->reason = COLLTUNE_NA_UNAVAILABLE;   /* ran, but the next calls may not be ours */
    }
    if (rc == MPI_SUCCESS)
        return rc;
    d->reason = ran ? COLLTUNE_NA_REFUSED : COLLTUNE_NA_UNAVAILABLE;
    return ct_library(m, call, info, request);
}

/* Collective over `parent`: a communicator whose coll/tuned serves `m`'s algorithm, with
 * MPI_ERRORS_RETURN (a refusal falls back to the library). */
static int ct_ompi_make(const ct_lib_member *m, MPI_Comm parent, MPI_Comm *out)
{
    MPI_Errhandler saved;
    int rc = ct_quiet(parent, &saved);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = ct_mpit_tuned_comm(parent, &ct_alg[m->coll], m->value, &ct_dynamic, &ct_han, out);
    int back = ct_loud(parent, &saved);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
    return rc != MPI_SUCCESS ? rc : back;
}

static void ct_cache_link(ct_lib_cache *c)
{
    c->next = ct_caches.next;
    c->prev = &ct_caches;
    ct_caches.next->prev = c;
    ct_caches.next = c;
}

static void ct_cache_free(ct_lib_cache *c)
{
    for (int i = 0; i < CT_LIB_MAX; i++)
        if (c->state[i] == 1)
            PMPI_Comm_free(&c->comm[i]);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    if (c->owner != NULL)
        *c->owner = NULL;
    free(c);
}

static int ct_lib_attr_delete(MPI_Comm comm, int keyval, void *attribute, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    ct_libalg_comm_free(attribute);
    return MPI_SUCCESS;
}

/* Where the member communicators of `comm` hang: the learning mode's state of it, or (members
 * forced without the learning mode) an attribute of our own, made on first use. NULL: none. */
static void **(*ct_slot_of)(MPI_Comm comm);   /* set while the learning mode runs */

void ct_libalg_slots_from(void **(*slot_of)(MPI_Comm comm))
{
    ct_slot_of = slot_of;
}

static ct_lib_cache *ct_lib_cache_of(MPI_Comm comm)
{
    void **slot = ct_slot_of != NULL ? ct_slot_of(comm) : NULL;
    if (slot != NULL && *slot != NULL)
        return *slot;
    void *value = NULL;
    int found = 0;
    if (slot == NULL) {
        if (ct_lib_keyval == MPI_KEYVAL_INVALID
            && PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ct_lib_attr_delete, &ct_lib_keyval,
                                       NULL) != MPI_SUCCESS)
            return NULL;
        if (PMPI_Comm_get_attr(comm, ct_lib_keyval, &value, &found) != MPI_SUCCESS)
            return NULL;
        if (found)
            return value;
    }
    ct_lib_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->owner = slot;
    c->parent = comm;
    if (slot != NULL)
        *slot = c;
    else if (PMPI_Comm_set_attr(comm, ct_lib_keyval, c) != MPI_SUCCESS) {
        free(c);
        return NULL;
    }
    ct_cache_link(c);
    return c;
}

void ct_libalg_comm_free(void *cache)
{
    if (cache != NULL)
        ct_cache_free(cache);
}

static int ct_ompi_run(int k, const ct_call *call, ct_decision *d)
{
    ct_lib_cache *c = ct_lib_cache_of(call->comm);
    if (c != NULL && c->state[k] == 0)
        c->state[k] = ct_ompi_make(&ct_members[k], call->comm, &c->comm[k]) == MPI_SUCCESS ? 1 : 2;
    if (c == NULL || c->state[k] != 1) {
        d->reason = COLLTUNE_NA_UNAVAILABLE;
        return colltune_invoke_library(call);
    }
    ct_call mine = *call;
    mine.comm = c->comm[k];
    int rc = colltune_invoke_library(&mine);
    if (rc == MPI_SUCCESS)
        return rc;
    d->reason = COLLTUNE_NA_REFUSED;
    return colltune_invoke_library(call);
}

int ct_libalg_run(const ct_call *call, ct_decision *d)
{
    int k = d->variant - CT_LIB_BASE;
    if (k < 0 || k >= ct_nmembers || ct_members[k].form != CT_FORM_BLOCKING) {
        d->reason = COLLTUNE_NA_ERROR;
        return colltune_invoke_library(call);
    }
    return ct_kind == CT_LIB_MPICH ? ct_each_call_run(&ct_members[k], call, d, MPI_INFO_NULL, NULL)
                                   : ct_ompi_run(k, call, d);
}

int ct_libalg_start(const ct_call *call, ct_decision *d, MPI_Info info, MPI_Request *request)
{
    int k = d->variant - CT_LIB_BASE;
    if (k < 0 || k >= ct_nmembers || ct_members[k].form == CT_FORM_BLOCKING) {
        d->variant = -1;   /* modes.c then lets the library start the call */
        d->reason = COLLTUNE_NA_ERROR;
        return MPI_SUCCESS;
    }
    return ct_each_call_run(&ct_members[k], call, d, info, request);
}

int ct_libalg_form(int id)
{
    return id >= CT_LIB_BASE && id < CT_LIB_BASE + ct_nmembers ? (int)ct_members[id - CT_LIB_BASE].form
                                                              : CT_FORM_BLOCKING;
}

/* ---- MPI_Finalize -------------------------------------------------------------------------- */

void ct_libalg_finish(void)
{
    /* Own attributes are deleted through MPI (which calls ct_lib_attr_delete) so that the
     * parent does not keep a pointer to freed memory until PMPI_Finalize deletes it again. */
    while (ct_caches.next != &ct_caches) {
        ct_lib_cache *c = ct_caches.next;
        if (c->owner != NULL || PMPI_Comm_delete_attr(c->parent, ct_lib_keyval) != MPI_SUCCESS
            || ct_caches.next == c)
            ct_cache_free(c);
    }
    if (ct_lib_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&ct_lib_keyval);
    /* Every variable is opened after MPI_T is up (ct_libalg_setup): without it none is present,
     * and a pass-through run, which never set MPI_T up, does not touch their pages (closing them
     * faulted in ~4 zero pages a rank at MPI_Finalize, benchmarks/advise/README.md "what the
     * preload alone costs"). */
    if (ct_mpit_up) {
        ct_mpit_var *all[] = {&ct_device, &ct_fallback, &ct_dynamic, &ct_han};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            ct_mpit_var_close(all[i]);
        for (int c = 0; c < CT_NUM_COLLECTIVES; c++) {
            ct_mpit_var_close(&ct_alg[c]);
            ct_mpit_var_close(&ct_alg_started[c]);
        }
        MPI_T_finalize();
    }
    ct_mpit_up = 0;
    ct_nmembers = 0;
    ct_kind = CT_LIB_NONE;
    ct_note = NULL;
}

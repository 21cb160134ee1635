/*
 * The proof gate (docs/select.md, "The proof"): a member (mock-up or library algorithm) serves a
 * call only in the case classes where `colltune selftest` saw it give the library default's
 * exact result on this library. The proof is read once at MPI_Init from COLLTUNE_PROOF or from
 * proof.txt next to libcolltune.so (the build cache is keyed by library identity, and the front
 * end deletes the proof whenever it rebuilds):
 *
 *   colltune-proof 2
 *   sizes 1,2,3                                   (communicator sizes the sized classes were
 *                                                  proven on, ct_proof.h)
 *   member <name> passed <class>,<class>,...      (classes as ct_proof_class_name writes them;
 *                                                  without its band: every band)
 *   fail <name> <class> <first failing case, free text to the end of the line>
 *
 * Without a proof (or with one of an older format, whose classes meant less) every member is
 * unproven: the calls go to the library, counted `not-applicable:unproven`. The ranks compare
 * the proof's hash at MPI_Init with the other settings, so they all serve alike.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_proof.h"
#include "ct_runtime.h"
#include "ct_select.h"
#include "ct_settings.h"

#define CT_PROOF_IDS (CT_LIB_BASE + CT_LIB_MAX)
#define CT_PROOF_HEADER "colltune-proof 2"

/* Written at MPI_Init only, read by every call: process-wide because the proof is per library,
 * not per communicator. */
CT_HIDDEN unsigned char ct_proof_full[CT_PROOF_IDS];
static ct_proof_set ct_passed[CT_PROOF_IDS];
static ct_proof_set ct_possible[CT_NUM_COLLECTIVES];   /* classes a call of the collective can be in */
static ct_proof_set ct_sized;
static uint64_t ct_sizes;                             /* bit n: sized classes proven on n ranks */
static char *ct_failure[CT_PROOF_IDS];               /* "class: case" of the first failure */
static unsigned char ct_warned[CT_PROOF_IDS];
static char ct_path[1024];
/* ct_written: ct_proof_load or a warning wrote the tables above; a pass-through run never does,
 * and clearing tables it never touched made MPI_Finalize fault in their zero pages (~6 a rank,
 * benchmarks/advise/README.md "what the preload alone costs"). Next to ct_loaded, whose page
 * MPI_Init reads in every run. */
static int ct_loaded, ct_stale, ct_written;

static int ct_member_id(const char *name)
{
    int v = colltune_variant_index(name);
    if (v >= 0)
        return v;
    for (int id = CT_LIB_BASE; id < CT_PROOF_IDS; id++) {
        const char *lib = ct_libalg_name(id);
        if (lib != NULL && strcmp(lib, name) == 0)
            return id;
    }
    return -1;
}

static int ct_member_collective(int id)
{
    return id >= CT_LIB_BASE ? ct_libalg_collective(id) : colltune_variant_collective(id);
}

static const char *ct_proof_path(void)
{
    const char *env = getenv(CT_ENV_PROOF);
    if (env != NULL && env[0] != '\0')
        return env;
    Dl_info info;
    if (dladdr((void *)ct_proof_path, &info) == 0 || info.dli_fname == NULL)
        return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dir = slash != NULL ? (size_t)(slash - info.dli_fname) : 1;
    snprintf(ct_path, sizeof ct_path, "%.*s/proof.txt", (int)dir,
             slash != NULL ? info.dli_fname : ".");
    return ct_path;
}

static ct_proof_set ct_class_list(char *list)
{
    ct_proof_set set = {{0}};
    list[strcspn(list, "\r\n")] = '\0';
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        ct_proof_class_parse(tok, &set);
    return set;
}

static uint64_t ct_size_list(char *list)
{
    uint64_t mask = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long n = strtol(tok, NULL, 10);
        if (n >= 1 && n <= CT_PROOF_MAX_SIZE)
            mask |= (uint64_t)1 << n;
    }
    return mask;
}

static void ct_proof_line(char *line)
{
    char name[CT_SELECT_LIB_NAME + 32], cls[CT_PROOF_NAME];
    int offset = 0;
    if (sscanf(line, "member %127s passed %n", name, &offset) == 1 && offset > 0) {
        int id = ct_member_id(name);
        if (id >= 0) {
            ct_passed[id] = ct_class_list(line + offset);
            const ct_proof_set *possible = &ct_possible[ct_member_collective(id)];
            /* Sized classes need the call's communicator size: never served unclassified. */
            ct_proof_full[id] = ct_proof_set_covers(&ct_passed[id], possible)
                                && !ct_proof_set_meets(possible, &ct_sized);
        }
    } else if (sscanf(line, "sizes %n", &offset) == 0 && offset > 0) {
        ct_sizes = ct_size_list(line + offset);
    } else if (sscanf(line, "fail %127s %47s %n", name, cls, &offset) == 2 && offset > 0) {
        int id = ct_member_id(name);
        size_t len = strlen(cls) + strlen(line + offset) + 3;
        if (id >= 0 && ct_failure[id] == NULL && (ct_failure[id] = malloc(len)) != NULL) {
            snprintf(ct_failure[id], len, "%s: %s", cls, line + offset);
            ct_failure[id][strcspn(ct_failure[id], "\r\n")] = '\0';
        }
    }
}

uint64_t ct_proof_load(void)
{
    for (int c = 0; c < CT_NUM_COLLECTIVES; c++)
        ct_proof_possible(c, &ct_possible[c]);
    ct_proof_sized_set(&ct_sized);
    ct_written = 1;
    const char *path = ct_proof_path();
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    if (f == NULL)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    uint64_t hash = 14695981039346656037ull;
    if (getline(&line, &cap, f) > 0) {
        ct_loaded = strncmp(line, CT_PROOF_HEADER "\n", sizeof CT_PROOF_HEADER) == 0;
        ct_stale = !ct_loaded && strncmp(line, "colltune-proof ", 15) == 0;
    }
    if (ct_loaded)
        do {
            for (const char *p = line; *p; p++)
                hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
            ct_proof_line(line);
        } while (getline(&line, &cap, f) > 0);
    free(line);
    fclose(f);
    return ct_loaded ? hash : 0;
}

int ct_proof_stale(void)
{
    return ct_stale;
}

int ct_proof_loaded(void)
{
    return ct_loaded;
}

const char *ct_proof_where(void)
{
    const char *env = getenv(CT_ENV_PROOF);
    return env != NULL && env[0] != '\0' ? env : ct_path;
}

/* Classify the call once (see ct_proof_need). */
static void ct_proof_need_fill(const ct_call *call, ct_proof_need *need)
{
    need->state = -1;
    if (ct_proof_required(call, &need->classes) != MPI_SUCCESS)
        return;
    int size = 0, sized = ct_proof_set_meets(&need->classes, &ct_sized);
    if (sized && PMPI_Comm_size(call->comm, &size) != MPI_SUCCESS)
        return;
    need->size_ok = !sized || (size >= 1 && size <= CT_PROOF_MAX_SIZE && (ct_sizes >> size & 1));
    need->state = 1;
}

int ct_proof_some(int id)
{
    if (id < 0 || id >= CT_PROOF_IDS)
        return 0;
    uint64_t any = ct_proof_full[id];
    for (int i = 0; i < CT_PROOF_WORDS; i++)
        any |= ct_passed[id].w[i];
    return any != 0;
}

/* Whether the member passed every class the call may be in, and, for a sized class, on a
 * communicator of the call's size. */
int ct_proof_meets_need(int id, const ct_call *call, ct_proof_need *need)
{
    if (ct_proof_full[id])
        return 1;
    if (need->state == 0)
        ct_proof_need_fill(call, need);
    return need->state > 0 && need->size_ok && ct_proof_set_covers(&ct_passed[id], &need->classes);
}

/* The first class the member is not proven in for the call, or -1: only the once-per-member
 * warning names it, and finding it walks every class (thousands of instructions). */
static int ct_first_missing(int id, const ct_call *call)
{
    ct_proof_need need = CT_PROOF_NEED_UNKNOWN;
    ct_proof_need_fill(call, &need);
    for (int c = 0; need.state > 0 && c < CT_PROOF_CLASSES; c++)
        if (ct_proof_set_has(&need.classes, c)
            && (!ct_proof_set_has(&ct_passed[id], c) || (ct_proof_sized(c) && !need.size_ok)))
            return c;
    return -1;
}

static int ct_proof_passes(int id, const ct_call *call)
{
    ct_proof_need need = CT_PROOF_NEED_UNKNOWN;
    return ct_proof_meets_need(id, call, &need);
}

colltune_reason ct_proof_check(int id, const ct_call *call)
{
    if (ct_proof_passes(id, call))
        return COLLTUNE_APPLICABLE;
    if (!ct_warned[id]) {   /* decisions are uniform: every rank warns alike, rank 0 speaks */
        int missing = ct_first_missing(id, call);
        ct_warned[id] = 1;
        ct_written = 1;
        int rank = 0, size = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        PMPI_Comm_size(call->comm, &size);
        char cls[CT_PROOF_NAME] = "unclassifiable", why[64] = "";
        if (missing >= 0)
            ct_proof_class_name(missing, cls, sizeof cls);
        if (missing >= 0 && ct_proof_sized(missing) && ct_proof_set_has(&ct_passed[id], missing))
            snprintf(why, sizeof why, "on %d ranks: the proof ran on other sizes", size);
        if (rank == 0)
            ct_message("%s is not proven on this library for %s calls (%s); those calls go to "
                       "the library", ct_member_name(id), cls,
                       !ct_loaded ? "no proof: run `colltune selftest`"
                       : why[0] != '\0' ? why
                       : ct_failure[id] != NULL ? ct_failure[id]
                       : ct_libalg_form(id) == CT_FORM_NONBLOCKING
                           ? "not tested: the nonblocking forms' algorithms are proven by "
                             "`colltune selftest --nonblocking`"
                       : ct_libalg_form(id) == CT_FORM_PERSISTENT
                           ? "not tested: the persistent forms' algorithms are proven by "
                             "`colltune selftest --persistent`"
                       : "not tested in that class");
    }
    return COLLTUNE_NA_UNPROVEN;
}

void ct_proof_clear(void)
{
    if (!ct_written)
        return;   /* every table still as loaded: zero */
    ct_written = 0;
    for (int id = 0; id < CT_PROOF_IDS; id++) {
        free(ct_failure[id]);
        ct_failure[id] = NULL;
        ct_warned[id] = 0;
        ct_passed[id] = (ct_proof_set){{0}};
        ct_proof_full[id] = 0;
    }
    ct_sizes = 0;
    ct_loaded = ct_stale = 0;
}

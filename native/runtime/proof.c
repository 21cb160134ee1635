/*
 * The proof gate (docs/select.md, "The proof"): a member (mock-up or library algorithm) serves a
 * call only in the case classes where `colltune selftest` saw it give the library default's
 * exact result on this library. The proof is read once at MPI_Init from COLLTUNE_PROOF or from
 * proof.txt next to libcolltune.so (the build cache is keyed by library identity, and the front
 * end deletes the proof whenever it rebuilds):
 *
 *   colltune-proof 1
 *   member <name> passed <class>,<class>,...      (classes as ct_proof_class_name writes them)
 *   fail <name> <class> <first failing case, free text to the end of the line>
 *
 * Without a proof every member is unproven: the calls go to the library, counted
 * `not-applicable:unproven`. The ranks compare the proof's hash at MPI_Init with the other
 * settings, so they all serve alike.
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

/* Written at MPI_Init only, read by every call: process-wide because the proof is per library,
 * not per communicator. */
CT_HIDDEN unsigned char ct_proof_full[CT_PROOF_IDS];
static uint64_t ct_passed[CT_PROOF_IDS];
static uint64_t ct_possible[CT_NUM_COLLECTIVES];   /* classes a call of the collective can be in */
static char *ct_failure[CT_PROOF_IDS];               /* "class: case" of the first failure */
static unsigned char ct_warned[CT_PROOF_IDS];
static char ct_path[1024];
static int ct_loaded;

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

static uint64_t ct_class_list(char *list)
{
    uint64_t mask = 0;
    list[strcspn(list, "\r\n")] = '\0';
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int cls = ct_proof_class_parse(tok);
        if (cls >= 0)
            mask |= (uint64_t)1 << cls;
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
            uint64_t possible = ct_possible[ct_member_collective(id)];
            ct_proof_full[id] = (ct_passed[id] & possible) == possible;
        }
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
        ct_possible[c] = ct_proof_possible(c);
    const char *path = ct_proof_path();
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    if (f == NULL)
        return 0;
    char line[1024];
    uint64_t hash = 14695981039346656037ull;
    if (fgets(line, sizeof line, f) != NULL && strncmp(line, "colltune-proof 1", 16) == 0) {
        ct_loaded = 1;
        do {
            for (const char *p = line; *p; p++)
                hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
            ct_proof_line(line);
        } while (fgets(line, sizeof line, f) != NULL);
    }
    fclose(f);
    return ct_loaded ? hash : 0;
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

int ct_proof_passes(int id, const ct_call *call)
{
    if (ct_proof_full[id])
        return 1;
    uint64_t required = ct_proof_required(call);
    return required != 0 && (ct_passed[id] & required) == required;
}

colltune_reason ct_proof_check(int id, const ct_call *call)
{
    uint64_t required = ct_proof_required(call);
    if (required != 0 && (ct_passed[id] & required) == required)
        return COLLTUNE_APPLICABLE;
    if (!ct_warned[id]) {   /* decisions are uniform: every rank warns alike, rank 0 speaks */
        ct_warned[id] = 1;
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        char cls[CT_PROOF_NAME] = "?";
        for (int c = 0; c < CT_PROOF_CLASSES; c++)
            if ((required >> c & 1) && !(ct_passed[id] >> c & 1)) {
                ct_proof_class_name(c, cls, sizeof cls);
                break;
            }
        if (rank == 0)
            ct_message("%s is not proven on this library for %s calls (%s); those calls go to "
                       "the library", ct_member_name(id), cls,
                       !ct_loaded ? "no proof: run `colltune selftest`"
                       : ct_failure[id] != NULL ? ct_failure[id] : "not tested in that class");
    }
    return COLLTUNE_NA_UNPROVEN;
}

void ct_proof_clear(void)
{
    for (int id = 0; id < CT_PROOF_IDS; id++) {
        free(ct_failure[id]);
        ct_failure[id] = NULL;
        ct_warned[id] = 0;
        ct_passed[id] = 0;
        ct_proof_full[id] = 0;
    }
    ct_loaded = 0;
}

/*
 * The proof (docs/select.md, "The proof"): which case classes each member passed on this
 * library. Every rank reports its own first failure per (member, class) as it happens, so a
 * crash still leaves the evidence of what came before; rank 0 accounts the merged verdicts and
 * prints one line per member at the end:
 *
 *   {"type":"proof_fail","member":...,"class":...,"rank":r,"what":...,"detail":...,"case":{...}}
 *   {"type":"proof","member":...,"tested":"<hex>","failed":"<hex>"}
 *
 * A class is proven when at least one case of it ran on every rank and none failed: a result
 * other than the library default's (bit for bit, or within the rounding bound for double sums),
 * an error on some ranks only, or an applicability answer that differs between ranks.
 */
#include <stdio.h>
#include <string.h>

#include "ct_libalg.h"
#include "ct_mpit.h"
#include "ct_proof.h"
#include "st.h"

#define ST_MEMBERS (CT_NUM_VARIANTS + 1)
#define ST_SLOTS 3

static ct_proof_set st_filter;
static int st_filtered;
static ct_proof_set st_tested[ST_MEMBERS], st_failed[ST_MEMBERS];   /* rank 0, merged */
static ct_proof_set st_reported[ST_MEMBERS];                         /* this rank's failure lines */
static uint64_t st_swept_sizes;
static ct_libalg st_forced[ST_SLOTS];
static int st_forced_open[ST_SLOTS];
static char st_member_name[160];
static int st_member_kind;   /* the --member's form (enum ct_form) */

int st_case_class(const st_case *c, const ct_call *call)
{
    return ct_proof_class(c->coll, c->in_place, c->op != NULL ? c->op->op : MPI_OP_NULL,
                          c->type->type, colltune_call_bytes(call));
}

static const char *st_name(int member)
{
    return member == ST_LIB_MEMBER ? st_member_name : colltune_variant_name(member);
}

void st_proof_failure(int member, const st_case *c, int cls, const char *what, const char *detail)
{
    if (cls < 0 || ct_proof_set_has(&st_reported[member], cls))
        return;
    ct_proof_set_add(&st_reported[member], cls);
    char name[CT_PROOF_NAME];
    ct_proof_class_name(cls, name, sizeof name);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("{\"type\":\"proof_fail\",\"member\":\"%s\",\"class\":\"%s\",\"rank\":%d,"
           "\"what\":\"%s\",\"detail\":\"%s\",\"case\":{\"collective\":\"%s\",\"comm\":\"%s\","
           "\"nprocs\":%d,\"datatype\":\"%s\",\"op\":\"%s\",\"count\":%d,\"root\":%d,"
           "\"in_place\":%s}}\n",
           st_name(member), name, rank, what, detail, colltune_collective_name(c->coll),
           c->comm->name, c->comm->size, c->type->name, c->op ? c->op->name : "", c->count,
           c->root, c->in_place ? "true" : "false");
    fflush(stdout);
}

void st_proof_account(int member, int cls, int applicable, int nonuniform, int failed)
{
    if (cls < 0)
        return;
    if (applicable || nonuniform)
        ct_proof_set_add(&st_tested[member], cls);
    if (nonuniform || (applicable && failed))
        ct_proof_set_add(&st_failed[member], cls);
}

void st_proof_swept_size(int size)
{
    if (size >= 1 && size <= CT_PROOF_MAX_SIZE)
        st_swept_sizes |= (uint64_t)1 << size;
}

static void st_print_classes(const char *key, const ct_proof_set *set)
{
    printf(",\"%s\":[", key);
    int first = 1;
    for (int cls = 0; cls < CT_PROOF_CLASSES; cls++)
        if (ct_proof_set_has(set, cls)) {
            char name[CT_PROOF_NAME];
            ct_proof_class_name(cls, name, sizeof name);
            printf("%s\"%s\"", first ? "" : ",", name);
            first = 0;
        }
    printf("]");
}

/* {"type":"proof_format","bands":[...],"sizes":[...]}: the band names (a member that passed all
 * of a class's bands is written without them) and the communicator sizes the sized classes were
 * swept on. */
static void st_print_format(uint64_t sizes)
{
    printf("{\"type\":\"proof_format\",\"bands\":[");
    for (int b = 0; b < CT_PROOF_BANDS; b++)
        printf("%s\"%s\"", b ? "," : "", ct_proof_band_name(b));
    printf("],\"sizes\":[");
    int first = 1;
    for (int n = 1; n <= CT_PROOF_MAX_SIZE; n++)
        if (sizes >> n & 1) {
            printf("%s%d", first ? "" : ",", n);
            first = 0;
        }
    printf("]}\n");
}

int st_proof_finish(MPI_Comm world, int rank, const char *lib_member)
{
    enum { W = CT_PROOF_WORDS };
    uint64_t masks[2 * ST_MEMBERS * W + 1];
    memcpy(masks, st_tested, sizeof st_tested);
    memcpy(masks + ST_MEMBERS * W, st_failed, sizeof st_failed);
    masks[2 * ST_MEMBERS * W] = st_swept_sizes;
    int err = PMPI_Allreduce(MPI_IN_PLACE, masks, 2 * ST_MEMBERS * W + 1, MPI_UINT64_T, MPI_BOR,
                             world);
    if (err != MPI_SUCCESS || rank != 0)
        return err;
    st_print_format(masks[2 * ST_MEMBERS * W]);
    for (int m = 0; m < ST_MEMBERS; m++) {
        if ((m == ST_LIB_MEMBER) != (lib_member != NULL))
            continue;
        ct_proof_set tested, failed;
        memcpy(&tested, masks + m * W, sizeof tested);
        memcpy(&failed, masks + (ST_MEMBERS + m) * W, sizeof failed);
        printf("{\"type\":\"proof\",\"member\":\"%s\"", st_name(m));
        st_print_classes("tested", &tested);
        st_print_classes("failed", &failed);
        printf("}\n");
    }
    fflush(stdout);
    return MPI_SUCCESS;
}

void st_print_member_classes(int coll)
{
    ct_proof_set possible;
    ct_proof_possible(coll, &possible);
    printf("{\"type\":\"classes\",\"collective\":\"%s\"", colltune_collective_name(coll));
    st_print_classes("classes", &possible);
    printf("}\n");
    fflush(stdout);
}

int st_class_selected(int cls)
{
    return !st_filtered || ct_proof_set_has(&st_filter, cls);
}

/* --classes: full class names (a rerun after a crash), or "none" (no case at all). */
void st_parse_classes(const char *names)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", names);
    st_filtered = 1;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        ct_proof_class_parse(tok, &st_filter);
}

int st_class_maybe(const st_case *c)
{
    if (!st_filtered)
        return 1;
    /* the band is the class's last component (ct_class_index): its other bands follow it */
    int base = ct_proof_class(c->coll, c->in_place, c->op != NULL ? c->op->op : MPI_OP_NULL,
                              c->type->type, 0);
    if (base < 0)
        return 1;
    base -= base % CT_PROOF_BANDS;
    for (int band = 0; band < CT_PROOF_BANDS; band++)
        if (ct_proof_set_has(&st_filter, base + band))
            return 1;
    return 0;
}

int st_class_first(const char *name)
{
    ct_proof_set set = {{0}};
    if (ct_proof_class_parse(name, &set) < 0)
        return -1;
    for (int cls = 0; cls < CT_PROOF_CLASSES; cls++)
        if (ct_proof_set_has(&set, cls))
            return cls;
    return -1;
}

void st_class_focus(int cls)
{
    memset(&st_filter, 0, sizeof st_filter);
    ct_proof_set_add(&st_filter, cls);
    st_filtered = 1;
}

void st_class_print(const char *what, int cls)
{
    char name[CT_PROOF_NAME];
    ct_proof_class_name(cls, name, sizeof name);
    printf("{\"type\":\"%s\",\"class\":\"%s\"}\n", what, name);
    fflush(stdout);
}

void st_tick(void)
{
    static double last;
    if (!st_member_active() || st_world_rank != 0)
        return;
    double now = PMPI_Wtime();
    if (last == 0.0 || now - last >= ST_TICK_S) {
        if (last != 0.0) {
            printf("{\"type\":\"tick\"}\n");
            fflush(stdout);
        }
        last = now;
    }
}

/* ---- the library's own algorithm, forced ---------------------------------------------------- */

int st_member_open(const char *spec, int slot, MPI_Comm comm, int *coll, char *err, size_t len)
{
    char copy[160];
    snprintf(copy, sizeof copy, "%s", spec);
    char *collective = strncmp(copy, "lib:", 4) == 0 ? copy + 4 : NULL;
    char *algorithm = collective != NULL ? strchr(collective, ':') : NULL;
    if (algorithm == NULL) {
        snprintf(err, len, "--member wants lib:<collective>:<algorithm>, not '%s'", spec);
        return MPI_ERR_ARG;
    }
    *algorithm++ = '\0';
    if ((*coll = colltune_collective_index(collective)) < 0) {
        snprintf(err, len, "unknown collective '%s' in --member %s", collective, spec);
        return MPI_ERR_ARG;
    }
    /* `#nonblocking`: MPI_I<coll> against the library's MPI_I<coll>; `#persistent`:
     * MPI_<Coll>_init + MPI_Start against the library's */
    char *form = strchr(algorithm, '#');
    st_member_kind = CT_FORM_BLOCKING;
    if (form != NULL) {
        *form++ = '\0';
        if (strcmp(form, "nonblocking") == 0) {
            st_member_kind = CT_FORM_NONBLOCKING;
        } else if (strcmp(form, "persistent") == 0 && CT_HAVE_PERSISTENT) {
            st_member_kind = CT_FORM_PERSISTENT;
        } else {
            snprintf(err, len, "--member %s: the forms proven are #nonblocking and #persistent "
                     "(the latter where the library declares MPI-4's persistent collectives)",
                     spec);
            return MPI_ERR_ARG;
        }
    }
    snprintf(st_member_name, sizeof st_member_name, "%s", spec);
    if (st_reference_mode() == ST_REFERENCE_WRITE) {   /* the library's own results only */
        st_forced_open[slot] = 0;
        return MPI_SUCCESS;
    }
    int rc = st_member_kind != CT_FORM_BLOCKING
                 ? ct_libalg_open_started(collective, algorithm, comm, &st_forced[slot], err, len)
                 : ct_libalg_open(collective, algorithm, comm, &st_forced[slot], err, len);
    /* as the runtime does (libalg_online.c): the persistent form keeps MPICH's own fallback,
     * since a refused MPI_<Coll>_init leaks its request and may abort MPI_Finalize */
    if (rc == MPI_SUCCESS && st_member_kind == CT_FORM_PERSISTENT)
        ct_mpit_var_close(&st_forced[slot].fallback);
    st_forced_open[slot] = rc == MPI_SUCCESS;
    if (rc == MPI_SUCCESS && st_forced[slot].comm != MPI_COMM_NULL)
        PMPI_Comm_set_errhandler(st_forced[slot].comm, MPI_ERRORS_RETURN);
    return rc;
}

int st_member_active(void)
{
    return st_member_name[0] != '\0';
}

int st_member_form(void)
{
    return st_member_kind;
}

MPI_Comm st_member_comm(int slot, MPI_Comm comm)
{
    return st_forced_open[slot] && st_forced[slot].comm != MPI_COMM_NULL ? st_forced[slot].comm
                                                                         : comm;
}

int st_member_select(void)
{
    return ct_libalg_select(&st_forced[0]);
}

int st_member_restore(void)
{
    return ct_libalg_restore(&st_forced[0]);
}

void st_member_close(void)
{
    for (int s = 0; s < ST_SLOTS; s++)
        if (st_forced_open[s])
            ct_libalg_close(&st_forced[s]);
}

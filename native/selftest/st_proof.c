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

uint64_t st_class_filter = ~(uint64_t)0;

static uint64_t st_tested[ST_MEMBERS], st_failed[ST_MEMBERS];   /* rank 0, merged */
static uint64_t st_reported[ST_MEMBERS];                          /* this rank's failure lines */
static ct_libalg st_forced[ST_SLOTS];
static int st_forced_open[ST_SLOTS];
static char st_member_name[160];

int st_case_class(const st_case *c)
{
    return ct_proof_class(c->coll, c->in_place, c->op != NULL ? c->op->op : MPI_OP_NULL,
                          c->type->type);
}

static const char *st_name(int member)
{
    return member == ST_LIB_MEMBER ? st_member_name : colltune_variant_name(member);
}

void st_proof_failure(int member, const st_case *c, int cls, const char *what, const char *detail)
{
    if (cls < 0 || (st_reported[member] >> cls & 1))
        return;
    st_reported[member] |= (uint64_t)1 << cls;
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
    uint64_t bit = (uint64_t)1 << cls;
    if (applicable || nonuniform)
        st_tested[member] |= bit;
    if (nonuniform || (applicable && failed))
        st_failed[member] |= bit;
}

static void st_print_classes(const char *key, uint64_t mask)
{
    printf(",\"%s\":[", key);
    int first = 1;
    for (int cls = 0; cls < CT_PROOF_CLASSES; cls++)
        if (mask >> cls & 1) {
            char name[CT_PROOF_NAME];
            ct_proof_class_name(cls, name, sizeof name);
            printf("%s\"%s\"", first ? "" : ",", name);
            first = 0;
        }
    printf("]");
}

int st_proof_finish(MPI_Comm world, int rank, const char *lib_member)
{
    uint64_t masks[2 * ST_MEMBERS];
    memcpy(masks, st_tested, sizeof st_tested);
    memcpy(masks + ST_MEMBERS, st_failed, sizeof st_failed);
    int err = PMPI_Allreduce(MPI_IN_PLACE, masks, 2 * ST_MEMBERS, MPI_UINT64_T, MPI_BOR, world);
    if (err != MPI_SUCCESS || rank != 0)
        return err;
    for (int m = 0; m < ST_MEMBERS; m++) {
        if ((m == ST_LIB_MEMBER) != (lib_member != NULL))
            continue;
        printf("{\"type\":\"proof\",\"member\":\"%s\"", st_name(m));
        st_print_classes("tested", masks[m]);
        st_print_classes("failed", masks[ST_MEMBERS + m]);
        printf("}\n");
    }
    fflush(stdout);
    return MPI_SUCCESS;
}

void st_print_member_classes(int coll)
{
    printf("{\"type\":\"classes\",\"collective\":\"%s\"", colltune_collective_name(coll));
    st_print_classes("classes", ct_proof_possible(coll));
    printf("}\n");
    fflush(stdout);
}

uint64_t st_parse_classes(const char *names)
{
    uint64_t mask = 0;
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", names);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int cls = ct_proof_class_parse(tok);
        if (cls >= 0) mask |= (uint64_t)1 << cls;
    }
    return mask;
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
    snprintf(st_member_name, sizeof st_member_name, "%s", spec);
    int rc = ct_libalg_open(collective, algorithm, comm, &st_forced[slot], err, len);
    st_forced_open[slot] = rc == MPI_SUCCESS;
    if (rc == MPI_SUCCESS && st_forced[slot].comm != MPI_COMM_NULL)
        PMPI_Comm_set_errhandler(st_forced[slot].comm, MPI_ERRORS_RETURN);
    return rc;
}

int st_member_active(void)
{
    return st_member_name[0] != '\0';
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

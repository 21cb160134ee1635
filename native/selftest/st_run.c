/*
 * colltune-selftest: one case run by the library, then by every variant (or the forced library
 * algorithm of --member), and judged.
 */
#include "st.h"
#include "ct_proof.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Running cases */

/* The variant's or member's output against the library's: result, op calls, send buffer. */
static void st_check_result(const st_case *c, const st_layout *L, const st_buffers *b, int member,
                            st_record *rec)
{
    char detail[512] = "";
    const char *what = NULL;
    if (!st_same(c, L, b->lib_recv, b->recv, b->recv_input, detail, sizeof detail)) {
        what = "result";
    } else if (st_count_misuse > 0) {
        what = "op-count";
        snprintf(detail, sizeof detail, "the user op was called %ld time(s) with a count other "
                 "than the caller's %d", st_count_misuse, c->count);
    } else if (memcmp(b->pristine, b->send, (size_t)L->send_bytes) != 0) {
        what = "sendbuf";
        snprintf(detail, sizeof detail, "the send buffer was modified");
    }
    if (what == NULL) return;
    rec->mismatch = 1;
    if (member != ST_LIB_MEMBER && !c->sweep) st_report(c, member, what, detail);
    st_proof_failure(member, c, rec->cls, what, detail);
}

static void st_run_variant(const st_case *c, const st_layout *L, const int *rc, st_buffers *b,
                           int variant, int lib_err, int cls, st_log *log)
{
    ct_call call;
    st_prepare(c, L, rc, b->send, b->recv, &call);
    memcpy(b->pristine, b->send, (size_t)L->send_bytes);
    memcpy(b->recv_input, b->recv, (size_t)L->recv_bytes);
    st_record rec = {variant, colltune_applicable(variant, &call), 0, 0, 0, 0, cls, c->sweep};
    colltune_reason expected = st_expected_reason(variant, c, st_case_bytes(c, rc), rc);
    char detail[512] = "";
    if ((int)expected != rec.reason) {
        rec.wrong = 1;
        snprintf(detail, sizeof detail, "colltune_applicable says %s, the rules say %s",
                 colltune_reason_name((colltune_reason)rec.reason), colltune_reason_name(expected));
        st_report(c, variant, "reason", detail);
    }
    const char *gap = rec.reason == COLLTUNE_APPLICABLE ? st_smpi_member_gap(variant, c) : NULL;
    if (gap != NULL) {   /* refused in the class: st_merge counts it failed there, never run */
        rec.reason = COLLTUNE_NA_REFUSED, rec.error = 1;
        st_proof_failure(variant, c, rec.cls, "refused", gap);
    } else if (rec.reason == COLLTUNE_APPLICABLE) {
        st_caller_count = c->count;
        st_count_misuse = 0;
        int err = colltune_invoke(variant, &call);
        if (err != MPI_SUCCESS || lib_err != MPI_SUCCESS) {
            rec.error = 1;
            st_error_text(err != MPI_SUCCESS ? err : lib_err, detail, sizeof detail);
            if (!c->sweep) st_report(c, err != MPI_SUCCESS ? variant : -1, "error", detail);
            st_proof_failure(variant, c, rec.cls, "error", detail);
        } else {
            st_check_result(c, L, b, variant, &rec);
        }
    }
    st_log_add(log, rec);
}

/* A persistent request is started this many times before it is freed: the schedule fixed at
 * init must give the same bits at every start, and a second start must find it reusable. */
enum { ST_PERSISTENT_STARTS = 2 };

/* The call of `form` (enum ct_form) as the library makes it: the blocking call; MPI_I<coll>;
 * MPI_<Coll>_init. Where a member's algorithm is forced, this is the call that fixes it. */
static int st_form_begin(int form, const ct_call *call, MPI_Request *request)
{
    return form == CT_FORM_NONBLOCKING ? colltune_start_library(call, request)
           : form == CT_FORM_PERSISTENT ? colltune_init_library(call, MPI_INFO_NULL, request)
                                        : colltune_invoke_library(call);
}

/* Its completion: the started call waited for; the persistent request started and waited for
 * ST_PERSISTENT_STARTS times, then freed (whatever happened). */
static int st_form_complete(int form, MPI_Request *request)
{
    if (form == CT_FORM_NONBLOCKING) return PMPI_Wait(request, MPI_STATUS_IGNORE);
    if (form != CT_FORM_PERSISTENT) return MPI_SUCCESS;
    int err = MPI_SUCCESS;
    for (int i = 0; i < ST_PERSISTENT_STARTS && err == MPI_SUCCESS; i++) {
        err = PMPI_Start(request);
        if (err == MPI_SUCCESS) err = PMPI_Wait(request, MPI_STATUS_IGNORE);
    }
    int freed = *request != MPI_REQUEST_NULL ? PMPI_Request_free(request) : MPI_SUCCESS;
    return err != MPI_SUCCESS ? err : freed;
}

/* The library's own call of the --member's form (a member of the nonblocking or persistent
 * form is proven against the library's call of that form), completed. */
static int st_library_call(const ct_call *call, int form)
{
    MPI_Request request = MPI_REQUEST_NULL;
    int err = st_form_begin(form, call, &request);
    return err == MPI_SUCCESS ? st_form_complete(form, &request) : err;
}

/* ---- the library's results from another launch (--reference-out / --reference-in) ------ */

static FILE *st_ref_file;
static int st_ref_mode = ST_REFERENCE_NONE;

int st_reference_open(const char *path, int mode, int rank)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%d", path, rank);
    st_ref_file = fopen(name, mode == ST_REFERENCE_WRITE ? "wb" : "rb");
    if (st_ref_file == NULL) return -1;
    st_ref_mode = mode;
    return 0;
}

int st_reference_mode(void)
{
    return st_ref_mode;
}

void st_reference_close(void)
{
    if (st_ref_file != NULL && fclose(st_ref_file) != 0 && st_ref_mode == ST_REFERENCE_WRITE) {
        fprintf(stderr, "colltune-selftest: rank %d: writing the reference results failed\n",
                st_world_rank);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    st_ref_file = NULL;
}

/* One case's record: class, error code, receive buffer size, the receive buffer. The two
 * launches run the same cases in the same order; a record of another class or size means they
 * did not, and nothing could be judged. */
static void st_reference_case(int cls, const st_layout *L, unsigned char *lib_recv, int *lib_err)
{
    int32_t head[2] = {cls, *lib_err};
    int64_t bytes = L->recv_bytes;
    int ok;
    if (st_ref_mode == ST_REFERENCE_WRITE) {
        ok = fwrite(head, sizeof head, 1, st_ref_file) == 1 && fwrite(&bytes, sizeof bytes, 1, st_ref_file) == 1
             && (bytes == 0 || fwrite(lib_recv, (size_t)bytes, 1, st_ref_file) == 1);
    } else {
        int64_t stored = -1;
        ok = fread(head, sizeof head, 1, st_ref_file) == 1 && fread(&stored, sizeof stored, 1, st_ref_file) == 1
             && head[0] == cls && stored == bytes
             && (bytes == 0 || fread(lib_recv, (size_t)bytes, 1, st_ref_file) == 1);
        *lib_err = head[1];
    }
    if (!ok) {
        fprintf(stderr, "colltune-selftest: rank %d: the reference results are %s\n", st_world_rank,
                st_ref_mode == ST_REFERENCE_WRITE ? "not written (disk full?)"
                                                  : "out of step with this launch's cases");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* The library's algorithm forced with --member, against the library's own choice. An error on
 * every rank is a refusal (the runtime then lets the library choose), on some ranks a failure. */
static void st_run_member(const st_case *c, const st_layout *L, const int *rc, st_buffers *b,
                          int lib_err, int cls, st_log *log)
{
    st_comm forced = *c->comm;
    forced.comm = st_member_comm(c->comm->slot, c->comm->comm);
    st_case fc = *c;
    fc.comm = &forced;
    ct_call call;
    st_prepare(&fc, L, rc, b->send, b->recv, &call);
    memcpy(b->pristine, b->send, (size_t)L->send_bytes);
    memcpy(b->recv_input, b->recv, (size_t)L->recv_bytes);
    st_record rec = {ST_LIB_MEMBER, COLLTUNE_APPLICABLE, 0, 0, 0, 0, cls, c->sweep};
    st_caller_count = c->count;
    st_count_misuse = 0;
    int form = st_member_form();
    MPI_Request request = MPI_REQUEST_NULL;
    int err = st_member_select();
    if (err == MPI_SUCCESS) {   /* a started call's algorithm is fixed at its start or init */
        err = st_form_begin(form, &call, &request);
        int restored = st_member_restore();
        if (err == MPI_SUCCESS) err = st_form_complete(form, &request);
        if (err == MPI_SUCCESS) err = restored;
    }
    char detail[512] = "";
    if (err != MPI_SUCCESS) {
        rec.reason = COLLTUNE_NA_REFUSED;
        st_error_text(err, detail, sizeof detail);
        st_proof_failure(ST_LIB_MEMBER, c, rec.cls, "refused", detail);
    } else if (lib_err != MPI_SUCCESS) {
        rec.error = 1;
        st_error_text(lib_err, detail, sizeof detail);
        st_report(c, -1, "error", detail);
    } else {
        st_check_result(c, L, b, ST_LIB_MEMBER, &rec);
    }
    st_log_add(log, rec);
}

/* The standard's arithmetic is modular for integers: an 8- or 16-bit MPI_SUM that saturates
 * (Open MPI 5.0's op/avx) is the library's bug, reported as a finding about it, not about a
 * member. Checked on separate-buffer allreduces on MPI_COMM_WORLD, whose input is byte slots,
 * by rank 0 alone (the one that reports it; every rank holds the same result): the reference
 * sums every rank's input, so checked on every rank it cost P^2 x count on P ranks where the
 * allreduce itself moves P x count. */
static void st_check_library_arithmetic(const st_case *c, const st_layout *L, const st_buffers *b,
                                        int lib_err)
{
    static int reported[3];
    int width = (int)c->type->size;
    if (lib_err != MPI_SUCCESS || c->coll != CT_COLL_ALLREDUCE || c->in_place
        || (c->type->kind != ST_UINT8 && c->type->kind != ST_RAW) || width > 2 || reported[width]
        || c->op->kind != ST_SUM || c->comm->slot != 0 || c->comm->rank != 0)
        return;
    unsigned modulus = 1u << (8 * width);
    for (int64_t i = 0; i < L->out_bytes / width; i++) {
        unsigned sum = 0, got = 0;
        for (int k = 0; k < width; k++) {   /* little-endian, as on every machine we run on */
            got |= (unsigned)b->lib_recv[width * i + k] << (8 * k);
            for (int r = 0; r < c->comm->size; r++)
                sum += (unsigned)st_byte_value(r, width * i + k) << (8 * k);
        }
        if (got != sum % modulus) {
            reported[width] = 1;
            printf("{\"type\":\"library_finding\",\"what\":\"%d-bit MPI_SUM does not wrap "
                   "modulo %u as the standard's integer arithmetic does\",\"detail\":\""
                   "MPI_Allreduce of %d %s on %d ranks: element %lld is %u, not %u\"}\n",
                   8 * width, modulus, c->count, c->type->name, c->comm->size, (long long)i,
                   got, sum % modulus);
            fflush(stdout);
            return;
        }
    }
}

void st_run_case(const st_case *c, st_buffers *b, st_log *log)
{
    if (st_smpi_library_gap(c) != NULL) return;   /* said once, as a library finding */
    if (st_member_active() && !st_class_maybe(c)) return;
    const int *rc = st_recvcounts(c);
    st_layout L = st_layout_of(c, rc);
    st_reserve(b, &L);
    ct_call lib_call;
    st_prepare(c, &L, rc, b->send, b->lib_recv, &lib_call);
    int cls = st_case_class(c, &lib_call);
    if (st_member_active()) {
        if (cls < 0 || !st_class_selected(cls)) return;
        int lib_err = st_ref_mode == ST_REFERENCE_READ ? MPI_SUCCESS
                                                       : st_library_call(&lib_call, st_member_form());
        if (st_ref_mode != ST_REFERENCE_NONE)
            st_reference_case(cls, &L, b->lib_recv, &lib_err);
        if (st_ref_mode != ST_REFERENCE_WRITE)
            st_run_member(c, &L, rc, b, lib_err, cls, log);
        st_tick();
        return;
    }
    int lib_err = colltune_invoke_library(&lib_call);
    st_check_library_arithmetic(c, &L, b, lib_err);
    for (int v = 0; v < CT_NUM_VARIANTS; v++)
        if (ct_variants[v].coll == c->coll) st_run_variant(c, &L, rc, b, v, lib_err, cls, log);
}

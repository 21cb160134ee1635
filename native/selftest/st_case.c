/*
 * colltune-selftest: the geometry of a case (buffers, layout, the call), how a result is compared
 * with the library's, and how a failure is reported.
 */
#include "st.h"
#include "ct_proof.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_world_rank;
int st_recvcounts_buf[4096];
static int st_failure_lines;

/* ------------------------------------------------------------------------------------------ */
/* Logs and buffers */

void st_log_add(st_log *log, st_record rec)
{
    if (log->len == log->cap) {
        log->cap = log->cap ? 2 * log->cap : 1024;
        log->records = realloc(log->records, log->cap * sizeof *log->records);
        if (log->records == NULL) {
            fprintf(stderr, "colltune-selftest: out of memory\n");
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    log->records[log->len++] = rec;
}

static void *st_grow(unsigned char **buf, size_t bytes)
{
    free(*buf);
    *buf = malloc(bytes ? bytes : 1);
    if (*buf == NULL) {
        fprintf(stderr, "colltune-selftest: out of memory (%zu bytes)\n", bytes);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    return *buf;
}

void st_reserve(st_buffers *b, const st_layout *L)
{
    if ((size_t)L->send_bytes > b->send_cap) {
        st_grow(&b->send, (size_t)L->send_bytes);
        st_grow(&b->pristine, (size_t)L->send_bytes);
        b->send_cap = (size_t)L->send_bytes;
    }
    if ((size_t)L->recv_bytes > b->recv_cap) {
        st_grow(&b->recv, (size_t)L->recv_bytes);
        st_grow(&b->lib_recv, (size_t)L->recv_bytes);
        st_grow(&b->recv_input, (size_t)L->recv_bytes);
        b->recv_cap = (size_t)L->recv_bytes;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Case geometry */

/* The collectives whose buffers this file describes: all but Reduce_local (local: no library
 * algorithm to prove); the neighborhood ones on communicators with a topology (st_is_neighbor). */
int st_geometry_known(int coll)
{
    return coll >= 0 && coll < CT_NUM_COLLECTIVES && coll != CT_COLL_REDUCE_LOCAL;
}

/* ------------------------------------------------------------------------------------------ */
/* The irregular forms: the block from rank `from` to rank `to` has st_block elements (of the
 * case's datatype; ST_MIXED's odd ranks count odd_factor as many). Symmetric in from and to,
 * so that in-place Alltoallv is legal; a zero block among them whenever p > 1. Blocks are laid
 * out in rank order with a gap of one element after each, which must keep its contents. */
#define ST_MAXP 4096
static int st_sc[ST_MAXP], st_sd[ST_MAXP], st_rc[ST_MAXP], st_rd[ST_MAXP];
/* Alltoallw: Alltoallv's blocks, displacements in bytes, every block of this rank's datatype
 * (ST_MIXED: an odd rank's type differs from an even rank's, with the same type signature per
 * block, so the types of one call differ across ranks as MPI allows). */
static int st_sdb[ST_MAXP], st_rdb[ST_MAXP];
static MPI_Datatype st_types[ST_MAXP];

int st_is_irregular(int coll)
{
    return coll == CT_COLL_GATHERV || coll == CT_COLL_SCATTERV || coll == CT_COLL_ALLGATHERV
           || coll == CT_COLL_ALLTOALLV || coll == CT_COLL_ALLTOALLW;
}

/* Count 7 gives equal blocks (the regular case, which CT3 serves), the other counts irregular
 * ones. */
static int st_block(const st_case *c, int from, int to)
{
    int k = (from + to) % 3;
    if (c->count == 7) return c->count;
    return c->count == 0 || k == 1 ? 0 : c->count + k;
}

int st_equal_blocks(const st_case *c)
{
    return c->count == 0 || c->count == 7 || c->comm->size == 1;
}

/* counts[i] = block between `me` and i (me the sender if `sending`), displacements with gaps;
 * returns the span in elements. `mult`: elements of this rank's datatype per case element. */
static int64_t st_v_side(const st_case *c, int me, int sending, int mult, int *counts, int *displs)
{
    int64_t at = 0;
    for (int i = 0; i < c->comm->size && i < ST_MAXP; i++) {
        counts[i] = mult * (sending ? st_block(c, me, i) : st_block(c, i, me));
        displs[i] = (int)at;
        at += counts[i] + mult;
    }
    return at;
}

int st_has_in_place(int coll)
{
    return ct_collectives[coll].in_place != CT_IN_PLACE_NONE;
}

/* Irregular counts (count+1, count, count-1, ...). Each block starts at or after its own
 * length: MPICH 5.0.2's MPI_Reduce_scatter with MPI_IN_PLACE moves a block to the buffer start
 * with memcpy and aborts when the two overlap (e.g. counts 262143, 262144 on 2 ranks). */
const int *st_recvcounts(const st_case *c)
{
    if (c->coll != CT_COLL_REDUCE_SCATTER) return NULL;
    int p = c->comm->size;
    for (int i = 0; i < p && i < 4096; i++)
        st_recvcounts_buf[i] = c->count == 0 ? 0 : c->count + 1 - (i % 3);
    return st_recvcounts_buf;
}

static int64_t st_sum_below(const int *counts, int upto)
{
    int64_t sum = 0;
    for (int i = 0; i < upto; i++) sum += counts[i];
    return sum;
}

static int64_t st_slot_bytes(const st_type *t)
{
    if (t->kind == ST_BYTE || t->kind == ST_UINT8 || t->kind == ST_RAW) return 1;
    return t->kind == ST_DOUBLE ? 8 : 4;
}

/* This rank's datatype, element count and extent for the case (ST_MIXED differs by rank). */
static void st_local(const st_case *c, MPI_Datatype *type, int *count, int64_t *extent)
{
    const st_type *t = c->type;
    int odd = t->kind == ST_MIXED && c->comm->rank % 2 == 1;
    *type = odd ? t->odd_type : t->type;
    *count = odd ? t->odd_factor * c->count : c->count;
    *extent = odd ? t->odd_extent : t->extent;
}

/* Message bytes of the case as the table defines them. */
int64_t st_case_bytes(const st_case *c, const int *recvcounts)
{
    int64_t p = c->comm->size;
    if (c->coll == CT_COLL_REDUCE_SCATTER_BLOCK) return p * c->count * c->type->size;
    if (c->coll == CT_COLL_REDUCE_SCATTER) return st_sum_below(recvcounts, (int)p) * c->type->size;
    return (int64_t)c->count * c->type->size;
}

/* Counts and displacements of this rank for an irregular case (st_sc.. st_rd); the spans in
 * elements of its datatype. Gatherv and Allgatherv gather blocks sent to rank 0 / the root,
 * Scatterv scatters the root's. */
static void st_v_geometry(const st_case *c, int mult, int64_t *send_span, int64_t *recv_span)
{
    int r = c->comm->rank, root = c->root < 0 ? 0 : c->root;
    switch (c->coll) {
    case CT_COLL_GATHERV:
    case CT_COLL_ALLGATHERV:
        *recv_span = 0;
        for (int i = 0, at = 0; i < c->comm->size && i < ST_MAXP; i++) {
            st_rc[i] = mult * st_block(c, i, root);
            st_rd[i] = at;
            at += st_rc[i] + mult;
            *recv_span = at;
        }
        *send_span = mult * st_block(c, r, root);
        break;
    case CT_COLL_SCATTERV:
        *send_span = st_v_side(c, root, 1, mult, st_sc, st_sd);
        *recv_span = mult * st_block(c, root, r);
        break;
    default: /* Alltoallv, Alltoallw */
        *send_span = st_v_side(c, r, 1, mult, st_sc, st_sd);
        *recv_span = st_v_side(c, r, 0, mult, st_rc, st_rd);
        break;
    }
}

/* Alltoallw's arrays from Alltoallv's (st_v_geometry, in elements of this rank's `type`, of
 * extent x): the displacements in bytes. */
static void st_w_arrays(const st_case *c, MPI_Datatype type, int64_t x)
{
    for (int i = 0; i < c->comm->size && i < ST_MAXP; i++) {
        st_sdb[i] = (int)(st_sd[i] * x);
        st_rdb[i] = (int)(st_rd[i] * x);
        st_types[i] = type;
    }
}

static int st_mult(const st_case *c)
{
    return c->type->kind == ST_MIXED && c->comm->rank % 2 == 1 ? c->type->odd_factor : 1;
}

/* ------------------------------------------------------------------------------------------ */
/* The neighborhood collectives, on the matrix's communicators given a topology (selftest.c
 * st_topology): this rank's in- and out-neighbours in the order the standard gives their
 * blocks (Cartesian: per dimension the source, then the destination of a shift by +1; a
 * periodic dimension of 1 or 2 names one rank twice). Blocks as the irregular forms' st_block,
 * which is symmetric in its two ranks, so a rank named twice gets equal blocks both times. */
static int st_nin, st_nout, st_srcs[ST_MAXP], st_dsts[ST_MAXP];

int st_is_neighbor(int coll)
{
    return coll == CT_COLL_NEIGHBOR_ALLGATHER || coll == CT_COLL_NEIGHBOR_ALLGATHERV
           || coll == CT_COLL_NEIGHBOR_ALLTOALL || coll == CT_COLL_NEIGHBOR_ALLTOALLV
           || coll == CT_COLL_NEIGHBOR_ALLTOALLW;
}

static void st_neighbors(MPI_Comm comm)
{
    int status = MPI_UNDEFINED, weighted = 0;
    st_nin = st_nout = 0;
    PMPI_Topo_test(comm, &status);
    if (status == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        for (int d = 0; d < nd && st_nin + 2 <= ST_MAXP; d++) {
            PMPI_Cart_shift(comm, d, 1, &st_srcs[st_nin], &st_srcs[st_nin + 1]);
            st_dsts[st_nin] = st_srcs[st_nin], st_dsts[st_nin + 1] = st_srcs[st_nin + 1];
            st_nin += 2;
        }
        st_nout = st_nin;
    } else if (status == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &st_nin, &st_nout, &weighted);
        if (st_nin > ST_MAXP) st_nin = ST_MAXP;
        if (st_nout > ST_MAXP) st_nout = ST_MAXP;
        PMPI_Dist_graph_neighbors(comm, st_nin, st_srcs, MPI_UNWEIGHTED, st_nout, st_dsts,
                                  MPI_UNWEIGHTED);
    }
}

/* counts[i] = block between `me` and peers[i] (me the sender if `sending`; Neighbor_allgatherv:
 * what peers[i] sends everyone), displacements with a gap of one element after each; the span. */
static int64_t st_nb_side(const st_case *c, int me, int sending, int mult, const int *peers,
                          int n, int *counts, int *displs)
{
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int from = sending ? me : peers[i], to = sending ? peers[i] : me;
        counts[i] = mult * st_block(c, from, c->coll == CT_COLL_NEIGHBOR_ALLGATHERV ? 0 : to);
        displs[i] = (int)at;
        at += counts[i] + mult;
    }
    return at;
}

static st_layout st_nb_layout_of(const st_case *c, int64_t x)
{
    st_neighbors(c->comm->comm);
    int mult = st_mult(c), r = c->comm->rank;
    int64_t blk = (int64_t)mult * c->count * x;
    st_layout L = {0, 0, 0, 0, 0, 0};
    switch (c->coll) {
    case CT_COLL_NEIGHBOR_ALLGATHER:
        L.send_bytes = blk, L.recv_bytes = st_nin * blk;
        break;
    case CT_COLL_NEIGHBOR_ALLTOALL:
        L.send_bytes = st_nout * blk, L.recv_bytes = st_nin * blk;
        break;
    case CT_COLL_NEIGHBOR_ALLGATHERV:
        L.send_bytes = (int64_t)mult * st_block(c, r, 0) * x;
        L.recv_bytes = st_nb_side(c, r, 0, mult, st_srcs, st_nin, st_rc, st_rd) * x;
        break;
    default:   /* Neighbor_alltoallv, Neighbor_alltoallw */
        L.send_bytes = st_nb_side(c, r, 1, mult, st_dsts, st_nout, st_sc, st_sd) * x;
        L.recv_bytes = st_nb_side(c, r, 0, mult, st_srcs, st_nin, st_rc, st_rd) * x;
        break;
    }
    /* MPICH refuses a NULL buffer with a nonzero count even where no neighbour uses it (a
     * degree of 0): one byte each, which must keep its contents like a gap */
    if (L.send_bytes == 0) L.send_bytes = 1;
    if (L.recv_bytes == 0) L.recv_bytes = 1;
    L.out_bytes = L.recv_bytes;
    return L;
}

/* Neighbor_alltoallw: Neighbor_alltoallv's blocks, displacements in bytes as MPI_Aint, every
 * block of this rank's datatype (ST_MIXED: an odd rank's type differs from its neighbours'). */
static MPI_Aint st_sda[ST_MAXP], st_rda[ST_MAXP];

/* The call: the counts and displacements st_nb_layout_of worked out (no MPI_IN_PLACE); x: the
 * extent of this rank's datatype. */
static void st_nb_prepare(const st_case *c, int64_t x, ct_call *call)
{
    int mult = st_mult(c), r = c->comm->rank;
    switch (c->coll) {
    case CT_COLL_NEIGHBOR_ALLGATHERV:
        call->sendcount = mult * st_block(c, r, 0), call->recvcount = 0;
        call->recvcounts = st_rc, call->rdispls = st_rd;
        break;
    case CT_COLL_NEIGHBOR_ALLTOALLV:
        call->sendcount = call->recvcount = 0;
        call->sendcounts = st_sc, call->sdispls = st_sd;
        call->recvcounts = st_rc, call->rdispls = st_rd;
        break;
    case CT_COLL_NEIGHBOR_ALLTOALLW:
        for (int i = 0; i < st_nout; i++) st_sda[i] = (MPI_Aint)(st_sd[i] * x);
        for (int i = 0; i < st_nin; i++) st_rda[i] = (MPI_Aint)(st_rd[i] * x);
        for (int i = 0; i < st_nin || i < st_nout; i++) st_types[i] = call->recvtype;
        call->sendcount = call->recvcount = 0;
        call->sendcounts = st_sc, call->sdispls_aint = st_sda, call->sendtypes = st_types;
        call->recvcounts = st_rc, call->rdispls_aint = st_rda, call->recvtypes = st_types;
        call->sendtype = call->recvtype = MPI_DATATYPE_NULL;
        break;
    default:   /* the regular forms: st_prepare's counts */
        break;
    }
}

static st_layout st_v_layout_of(const st_case *c, int64_t x)
{
    int64_t send_span, recv_span;
    st_v_geometry(c, st_mult(c), &send_span, &recv_span);
    int is_root = c->comm->rank == c->root, ip = c->in_place;
    st_layout L = {0, 0, 0, 0, 0, 0};
    switch (c->coll) {
    case CT_COLL_GATHERV:
        L.send_bytes = is_root && ip ? 0 : send_span * x;
        L.recv_bytes = is_root ? recv_span * x : 0;
        break;
    case CT_COLL_SCATTERV:
        L.send_bytes = is_root ? send_span * x : 0;
        L.recv_bytes = is_root && ip ? 0 : recv_span * x;
        break;
    default: /* Allgatherv, Alltoallv, Alltoallw */
        L.send_bytes = ip ? 0 : send_span * x;
        L.recv_bytes = recv_span * x;
        break;
    }
    L.out_bytes = L.recv_bytes;
    return L;
}

st_layout st_layout_of(const st_case *c, const int *rc)
{
    int64_t p = c->comm->size, r = c->comm->rank, x;
    MPI_Datatype type;
    int count;
    st_local(c, &type, &count, &x);
    int64_t blk = count * x;
    int is_root = r == c->root, ip = c->in_place;
    st_layout L = {0, 0, 0, 0, 0, 0};
    if (st_is_irregular(c->coll)) return st_v_layout_of(c, x);
    if (st_is_neighbor(c->coll)) return st_nb_layout_of(c, x);
    switch ((enum ct_coll_id)c->coll) {
    case CT_COLL_EXSCAN:   /* rank 0's result is undefined: nothing compared there */
        L.send_bytes = ip ? 0 : blk, L.recv_bytes = blk;
        L.out_bytes = r == 0 ? 0 : blk;
        return L;
    case CT_COLL_ALLGATHER:
        L.send_bytes = ip ? 0 : blk, L.recv_bytes = p * blk;
        break;
    case CT_COLL_ALLREDUCE:
    case CT_COLL_SCAN:
        L.send_bytes = ip ? 0 : blk, L.recv_bytes = blk;
        break;
    case CT_COLL_ALLTOALL:
        L.send_bytes = ip ? 0 : p * blk, L.recv_bytes = p * blk;
        break;
    case CT_COLL_BCAST:
        L.recv_bytes = blk;
        break;
    case CT_COLL_GATHER:
        L.send_bytes = is_root && ip ? 0 : blk, L.recv_bytes = is_root ? p * blk : 0;
        break;
    case CT_COLL_REDUCE:
        L.send_bytes = is_root && ip ? 0 : blk, L.recv_bytes = is_root ? blk : 0;
        break;
    case CT_COLL_REDUCE_SCATTER_BLOCK:
        L.send_bytes = ip ? 0 : p * blk, L.recv_bytes = ip ? p * blk : blk;
        L.out_bytes = blk, L.first_slot = r * blk / st_slot_bytes(c->type);
        L.tail_bytes = L.recv_bytes - blk;
        return L;
    case CT_COLL_REDUCE_SCATTER: {
        int64_t total = st_sum_below(rc, (int)p) * x, below = st_sum_below(rc, (int)r) * x;
        L.send_bytes = ip ? 0 : total, L.recv_bytes = ip ? total : rc[r] * x;
        L.out_bytes = rc[r] * x, L.first_slot = below / st_slot_bytes(c->type);
        L.tail_bytes = L.recv_bytes - L.out_bytes;
        return L;
    }
    case CT_COLL_SCATTER:
        L.send_bytes = is_root ? p * blk : 0, L.recv_bytes = is_root && ip ? 0 : blk;
        break;
    default:   /* st_geometry_known */
        break;
    }
    L.out_bytes = L.recv_bytes;
    return L;
}

/* The irregular forms' call: arrays significant on this rank only (NULL elsewhere), the own
 * block in place where MPI_IN_PLACE asks for it there. */
static void st_v_prepare(const st_case *c, const st_layout *L, unsigned char *recv, int64_t x,
                         ct_call *call)
{
    int r = c->comm->rank, is_root = r == c->root, mult = st_mult(c);
    int64_t send_span, recv_span;
    st_v_geometry(c, mult, &send_span, &recv_span);
    enum st_kind kind = c->type->kind;
    int coll = c->coll, ip = c->in_place;
    call->sendcounts = st_sc, call->sdispls = st_sd, call->recvcounts = st_rc, call->rdispls = st_rd;
    call->sendcount = (int)send_span, call->recvcount = (int)recv_span;
    if (coll == CT_COLL_GATHERV || coll == CT_COLL_ALLGATHERV) {
        call->sendcounts = call->sdispls = NULL;
        call->recvcount = 0;
        if (coll == CT_COLL_GATHERV && !is_root)
            call->recvcounts = call->rdispls = NULL, call->recvtype = MPI_DATATYPE_NULL;
        if (ip && (is_root || coll == CT_COLL_ALLGATHERV)) {
            st_fill(recv + st_rd[r] * x, st_rc[r] * x, kind, r, 0);
            call->sendbuf = MPI_IN_PLACE, call->sendcount = 0, call->sendtype = MPI_DATATYPE_NULL;
        }
    } else if (coll == CT_COLL_SCATTERV) {
        call->recvcounts = call->rdispls = NULL;
        call->sendcount = 0;
        if (!is_root)
            call->sendcounts = call->sdispls = NULL, call->sendtype = MPI_DATATYPE_NULL;
        if (ip && is_root)
            call->recvbuf = MPI_IN_PLACE, call->recvcount = 0, call->recvtype = MPI_DATATYPE_NULL;
    } else {   /* Alltoallv, Alltoallw */
        call->sendcount = call->recvcount = 0;
        if (coll == CT_COLL_ALLTOALLW) {
            st_w_arrays(c, call->recvtype, x);
            call->sdispls = st_sdb, call->rdispls = st_rdb;
            call->sendtypes = call->recvtypes = st_types;
            call->sendtype = call->recvtype = MPI_DATATYPE_NULL;
        }
        if (ip) {
            st_fill(recv, L->recv_bytes, kind, r, 0);
            call->sendbuf = MPI_IN_PLACE, call->sendcounts = call->sdispls = NULL;
            call->sendtype = MPI_DATATYPE_NULL, call->sendtypes = NULL;
        }
    }
}

/* SMPI 3.32 checks this rank's recvbuf of MPI_Reduce_scatter against every rank's count
 * (src/smpi/bindings/smpi_pmpi_coll.cpp:645-648): a NULL one, legal where this rank's own count
 * is 0, fails on this rank alone and the others wait. The case passes the (legal) unused buffer
 * there instead. */
static int st_keeps_recvbuf(const st_case *c)
{
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    return c->coll == CT_COLL_REDUCE_SCATTER;
#else
    (void)c;
    return 0;
#endif
}

/* Fill the buffers with this rank's input (identical for the library's and the variant's run)
 * and describe the call. */
void st_prepare(const st_case *c, const st_layout *L, const int *rc, unsigned char *send,
                       unsigned char *recv, ct_call *call)
{
    int r = c->comm->rank, p = c->comm->size, is_root = r == c->root;
    enum st_kind kind = c->type->kind;
    MPI_Datatype type;
    int count;
    int64_t extent;
    st_local(c, &type, &count, &extent);
    int64_t blk = count * extent, slot = st_slot_bytes(c->type);
    st_salt = c->sweep ? st_case_salt(c->type->name, c->coll, c->op ? (int)c->op->kind : -1,
                                      c->count, c->root, c->in_place, c->rep) : 0;
    st_fill(send, L->send_bytes, kind, r, 0);
    memset(recv, ST_SENTINEL, (size_t)L->recv_bytes);
    *call = (ct_call){.coll = c->coll, .sendbuf = send, .recvbuf = recv, .sendcount = count,
                      .recvcount = count, .recvcounts = rc, .sendtype = type,
                      .recvtype = type, .op = c->op ? c->op->op : MPI_OP_NULL,
                      .root = c->root, .comm = c->comm->comm};
    if (L->send_bytes == 0) call->sendbuf = NULL;
    if (L->recv_bytes == 0 && !st_keeps_recvbuf(c)) call->recvbuf = NULL;
    int ip = c->in_place;
    if (st_is_irregular(c->coll)) {
        st_v_prepare(c, L, recv, extent, call);
        return;
    }
    if (st_is_neighbor(c->coll)) {
        st_nb_prepare(c, extent, call);
        return;
    }
    switch ((enum ct_coll_id)c->coll) {
    case CT_COLL_BARRIER:
        call->sendbuf = NULL, call->recvbuf = NULL;
        call->sendtype = call->recvtype = MPI_DATATYPE_NULL;
        call->sendcount = call->recvcount = 0;
        return;
    case CT_COLL_ALLGATHER:
        if (ip) st_fill(recv + r * blk, blk, kind, r, r * blk / slot);
        break;
    case CT_COLL_BCAST:
        if (is_root) st_fill(recv, blk, kind, r, 0);
        call->sendbuf = NULL;
        break;
    case CT_COLL_GATHER:
        if (!is_root) call->recvcount = 0, call->recvtype = MPI_DATATYPE_NULL;
        if (is_root && ip) {
            st_fill(recv + r * blk, blk, kind, r, r * blk / slot);
            call->sendcount = 0, call->sendtype = MPI_DATATYPE_NULL;
        }
        ip = ip && is_root;
        break;
    case CT_COLL_SCATTER:
        if (!is_root) call->sendcount = 0, call->sendtype = MPI_DATATYPE_NULL;
        if (is_root && ip) {
            call->recvbuf = MPI_IN_PLACE;
            call->recvcount = 0, call->recvtype = MPI_DATATYPE_NULL;
        }
        ip = 0;
        break;
    case CT_COLL_REDUCE:
        if (is_root && ip) st_fill(recv, L->recv_bytes, kind, r, 0);
        ip = ip && is_root;
        break;
    default:
        if (ip) st_fill(recv, L->recv_bytes, kind, r, 0);
        break;
    }
    (void)p;
    if (ip) call->sendbuf = MPI_IN_PLACE;
    if (call->sendbuf == MPI_IN_PLACE && c->coll != CT_COLL_GATHER) {
        call->sendcount = 0;
        call->sendtype = MPI_DATATYPE_NULL;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Reporting */

static void st_case_json(const st_case *c, char *out, size_t len)
{
    snprintf(out, len,
             "{\"collective\":\"%s\",\"comm\":\"%s\",\"nprocs\":%d,\"datatype\":\"%s\","
             "\"op\":\"%s\",\"count\":%d,\"root\":%d,\"in_place\":%s}",
             colltune_collective_name(c->coll), c->comm->name, c->comm->size, c->type->name,
             c->op ? c->op->name : "", c->count, c->root, c->in_place ? "true" : "false");
}

void st_report(const st_case *c, int variant, const char *what, const char *detail)
{
    if (st_failure_lines++ >= ST_MAX_FAILURE_LINES) return;
    char desc[512];
    st_case_json(c, desc, sizeof desc);
    printf("{\"type\":\"failure\",\"variant\":\"%s\",\"rank\":%d,\"comm_rank\":%d,\"case\":%s,"
           "\"what\":\"%s\",\"detail\":\"%s\"}\n",
           variant >= 0 ? colltune_variant_name(variant) : "library", st_world_rank,
           c->comm->rank, desc, what, detail);
    fflush(stdout);
}

void st_error_text(int err, char *out, size_t len)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (PMPI_Error_string(err, text, &n) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
    for (char *s = text; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) *s = ' ';
    snprintf(out, len, "MPI error %d: %.200s", err, text);
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison */

static double st_gamma(int m)
{
    const double u = ldexp(1.0, -53);
    return m * u / (1.0 - m * u);
}

static int st_within_tolerance(const st_case *c, const st_layout *L, const unsigned char *lib,
                               const unsigned char *var, char *detail, size_t len)
{
    int p = c->comm->size;
    int64_t n = L->out_bytes / 8;
    for (int64_t k = 0; k < n; k++) {
        double a, b;
        memcpy(&a, lib + L->out_begin + 8 * k, 8);
        memcpy(&b, var + L->out_begin + 8 * k, 8);
        if (memcmp(&a, &b, 8) == 0) continue;
        double abs_sum = 0.0;
        for (int j = 0; j < p; j++) abs_sum += fabs(st_double_value(j, L->first_slot + k));
        double tolerance = 2.0 * st_gamma(p - 1) * abs_sum * (1.0 + 1e-12);
        if (!(fabs(a - b) <= tolerance)) {
            snprintf(detail, len, "element %lld: library %.17g, variant %.17g, |diff| %.3g > %.3g",
                     (long long)k, a, b, fabs(a - b), tolerance);
            return 0;
        }
    }
    return 1;
}

/* The library's result where the standard defines one. Past the result of an in-place
 * Reduce_scatter(_block) the standard defines nothing and the libraries differ (MPICH's large
 * messages and Open MPI's non-commutative Reduce_scatter use it as temporary space), but
 * programs rely on it keeping the input: the variant must keep it (compared with `input`). */
int st_same(const st_case *c, const st_layout *L, const unsigned char *lib,
                   const unsigned char *var, const unsigned char *input, char *detail, size_t len)
{
    int64_t tail = L->out_begin + L->out_bytes;
    if (memcmp(input + tail, var + tail, (size_t)L->tail_bytes) != 0) {
        snprintf(detail, len, "the variant changed the receive buffer past the result (%lld "
                 "bytes of the in-place input)", (long long)L->tail_bytes);
        return 0;
    }
    if (memcmp(lib + L->out_begin, var + L->out_begin, (size_t)L->out_bytes) == 0) return 1;
    /* The sweep asks for the default's bits: another rounding is another result. */
    if (c->type->kind == ST_DOUBLE && c->op != NULL && c->op->kind == ST_SUM && !c->sweep)
        return st_within_tolerance(c, L, lib, var, detail, len);
    for (int64_t i = 0; i < L->out_bytes; i++)
        if (lib[L->out_begin + i] != var[L->out_begin + i]) {
            snprintf(detail, len, "receive buffer differs first at byte %lld of %lld (library 0x%02x, "
                     "variant 0x%02x)", (long long)i, (long long)L->out_bytes,
                     lib[L->out_begin + i], var[L->out_begin + i]);
            break;
        }
    return 0;
}

/*
 * colltune-selftest: runs every variant against the library's own collective on identical
 * inputs over a matrix of cases and reports, as JSON lines on stdout:
 *
 *   {"type":"start", ...}                      rank 0, once
 *   {"type":"failure", ...}                    any rank, per mismatch (details)
 *   {"type":"variant", ...}                    rank 0, per variant: cases, failures,
 *                                              not_applicable by reason, reason mismatches
 *   {"type":"summary", ...}                    rank 0, last line
 *
 * Results must be bit-identical (receive buffers including the gaps of the vector datatype,
 * send buffers untouched), except MPI_SUM on MPI_DOUBLE, where any two summation orders of p
 * terms may differ by at most 2 * gamma(p-1) * sum|x_i| per element (gamma(m) = m*u/(1-m*u),
 * u = 2^-53: the worst-case error bound of recursive summation in any order, Higham, Accuracy
 * and Stability of Numerical Algorithms, 2002, eq. 4.4, counted once for each side).
 *
 * Outcomes are gathered without a collective per case: every rank logs its outcome per case,
 * one MPI_Allreduce per communicator at the end merges them (a mismatch on any rank fails the
 * case; a reason that differs between ranks is reported as `nonuniform`).
 *
 *   {"type":"progress", ...}                   rank 0, after each (communicator, collective)
 *
 * With --member lib:<collective>:<algorithm> it proves that library algorithm instead of the
 * mock-ups, and both print the proof's lines (st_proof.c); --list-members lists the library's
 * algorithms. Files: st_case.c (case geometry, comparison), st_run.c (one case), st_data.c
 * (datatypes, ops, inputs), st_expect.c (the applicability rules), st_proof.c (the proof).
 *
 * With --sweep it also runs the proof's sweep (st_run_sweep), whose cases count for the proof
 * only.
 *
 * With --fuzz SEED [--cases N] it runs N random cases instead (st_run_fuzz), for the proof only.
 *
 * Usage: colltune-selftest [--no-big] [--quick] [--sweep] [--fuzz SEED [--cases N]]
 *                          [--collective NAME]
 *                          [--member lib:<collective>:<algorithm> [--classes CLASS,...]
 *                          [--reference-out FILE | --reference-in FILE]
 *                          [--by-class CLASS]]
 *                          [--list-members]
 *
 * --reference-out/--reference-in: the library's results of a member's cases from a launch
 * without the member's setting, for a library that fixes its algorithms per launch (st.h).
 */
#include "st.h"
#include "ct_libalg.h"
#include "ct_proof.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST_BIG_BYTES (1 << 20)

typedef struct st_tally {
    long long cases, failures, nonuniform, wrong, probes;
    long long na[COLLTUNE_REASON_COUNT];        /* matrix cases not applicable, by reason */
    long long probe_reasons[COLLTUNE_REASON_COUNT]; /* probes, by reason (0: applicable) */
} st_tally;

#define ST_TALLY_LONGS ((int)(sizeof(st_tally) / sizeof(long long)))

static int st_roots(int coll, int p, int roots[3])
{
    if (!ct_collectives[coll].has_root) {
        roots[0] = -1;
        return 1;
    }
    int n = 0;
    int candidates[3] = {0, p - 1, p / 2};
    for (int i = 0; i < 3; i++) {
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= roots[j] == candidates[i];
        if (!dup) roots[n++] = candidates[i];
    }
    return n;
}

/* Quick mode (for oversubscribed busy-polling libraries): counts 0 and 7 only, on the split and
 * duplicated communicators only MPI_INT and the vector datatype, one 1 MiB case per collective. */
static void st_run_matrix(const st_comm *comm, int coll, const st_type *types, const st_op *ops,
                          st_buffers *b, st_log *log, int quick)
{
    static const int all_counts[] = {0, 1, 7, 1000}, quick_counts[] = {0, 7};
    const int *counts = quick ? quick_counts : all_counts;
    size_t ncounts = quick ? 2 : 4;
    int world = comm->slot == 0;
    int roots[3];
    int nroots = st_roots(coll, comm->size, roots);
    int has_op = ct_collectives[coll].has_op;
    if (coll == CT_COLL_BARRIER) {   /* no data: one case, twice (a member may fail later) */
        st_case c = {coll, comm, &types[ST_BYTE], NULL, 0, -1, 0};
        st_run_case(&c, b, log);
        st_run_case(&c, b, log);
        return;
    }
    for (int t = 0; t < ST_NUM_TYPES; t++)
        for (int o = 0; o < (has_op ? ST_NUM_OPS : 1); o++) {
            if (has_op && !st_op_valid(&ops[o], &types[t])) continue;
            if (quick && !world && t != ST_INT && t != ST_VECTOR) continue;
            int callers_count = has_op && ops[o].kind == ST_USER_COUNT;
            if (callers_count && coll != CT_COLL_ALLREDUCE && coll != CT_COLL_REDUCE && coll != CT_COLL_SCAN)
                continue;
            for (size_t k = 0; k < ncounts; k++)
                for (int ri = 0; ri < nroots; ri++)
                    for (int ip = 0; ip <= st_has_in_place(coll); ip++) {
                        if (callers_count && counts[k] != 1) continue;
                        st_case c = {coll, comm, &types[t], has_op ? &ops[o] : NULL, counts[k],
                                     roots[ri], ip};
                        st_run_case(&c, b, log);
                    }
        }
}

/* Send and receive buffer adjacent, in both orders, count 1 (< p): legal (no overlap),
 * and MPICH rejects a call whose buffers alias, so a variant that hands the library a pointer
 * one past the end of recvbuf (the start of sendbuf here) for a rank that owns 0 elements is
 * caught on MPICH (IMB-MPI1's own MPI_Allreduce of one double hit exactly that). */
static void st_run_adjacent(const st_comm *comm, int coll, const st_type *types, const st_op *ops,
                            st_buffers *b, st_log *log)
{
    if (coll == CT_COLL_BCAST) return; /* one buffer only */
    int has_op = ct_collectives[coll].has_op;
    st_case c = {coll, comm, &types[ST_INT], has_op ? &ops[ST_SUM] : NULL, 1,
                 ct_collectives[coll].has_root ? comm->size - 1 : -1, 0};
    const int *rc = st_recvcounts(&c);
    st_layout L = st_layout_of(&c, rc);
    st_reserve(b, &L);
    unsigned char *adjacent = malloc((size_t)(L.recv_bytes + L.send_bytes) + 1);
    if (adjacent == NULL) return;
    unsigned char *send = b->send, *recv = b->recv;
    for (int recv_first = 1; recv_first >= 0; recv_first--) {
        b->recv = recv_first ? adjacent : adjacent + L.send_bytes;
        b->send = recv_first ? adjacent + L.recv_bytes : adjacent;
        st_run_case(&c, b, log);
    }
    b->send = send, b->recv = recv;
    free(adjacent);
}

/* At least 1 MiB per block: every variant sees a large message, on MPI_COMM_WORLD, both with
 * and without MPI_IN_PLACE, with an exact (MPI_INT) and a rounding (MPI_DOUBLE) sum. */
static void st_run_big(const st_comm *comm, int coll, const st_type *types, const st_op *ops,
                       st_buffers *b, st_log *log, int quick)
{
    int has_op = ct_collectives[coll].has_op;
    int root = ct_collectives[coll].has_root ? comm->size - 1 : -1;
    for (int ip = 0; ip <= (quick ? 0 : st_has_in_place(coll)); ip++) {
        st_case c = {coll, comm, &types[ST_INT], has_op ? &ops[ST_SUM] : NULL,
                     ST_BIG_BYTES / 4, root, ip};
        st_run_case(&c, b, log);
    }
    if (has_op && !quick) {
        st_case c = {coll, comm, &types[ST_DOUBLE], &ops[ST_SUM], ST_BIG_BYTES / 8, root, 0};
        st_run_case(&c, b, log);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The proof's sweep (--sweep; docs/select.md, "The proof"): the cases that can tell a member
 * from the default, compared bit for bit and counted for the proof only (another rounding of a
 * double sum is another result here, where the matrix above accepts it as correct). Counts on
 * both sides of the vector widths (16, 32, 64 bytes), of the segment sizes the algorithms cut
 * vectors into, and of the libraries' short/long switches (2 KiB, 64 KiB). */

/* 8460: found by the fuzzer (seed 5): Open MPI's ring allreduce on 2 ranks cuts 8460 8-bit
 * elements into halves of 4230, whose last 6 op/avx adds in its scalar loop (wrapping) where the
 * default saturates: no count above differed there. 32379: found by reduction_hashes
 * (reduce_scatter of int8 on 3 ranks, ring), the same way. */
static const int st_sweep_counts[] = {1, 2, 3, 15, 16, 17, 63, 64, 65, 128, 1000, 4099, 8460,
                                      32379, 70000};
#define ST_SWEEP_COUNTS ((int)(sizeof st_sweep_counts / sizeof *st_sweep_counts))

/* A reduction of a few floats shows another combination order only in some inputs (three
 * floats summed in two orders agree about half the time): those cases run with 8 inputs. */
static void st_sweep_case(const st_comm *comm, int coll, const st_type *type, const st_op *op,
                          int count, st_buffers *b, st_log *log)
{
    int roots[3];
    int nroots = st_roots(coll, comm->size, roots);
    int few_floats = (type->kind == ST_FLOAT || type->kind == ST_DOUBLE) && op != NULL
                     && count * type->size < 16;
    for (unsigned rep = 0; rep < (few_floats ? 8u : 1u); rep++)
        for (int ri = 0; ri < nroots; ri++)
            for (int ip = 0; ip <= st_has_in_place(coll); ip++) {
                st_case c = {coll, comm, type, op, count, roots[ri], ip, 1, rep};
                st_run_case(&c, b, log);
            }
}

/* Whether the sweep moves `count` elements of per-rank layouts (ST_MIXED) for `coll`. MPICH
 * 5.0.2's ring MPI_Allgatherv counts its pipeline chunk in each rank's own extent, so on these
 * layouts it aborts ("Message truncated") where it runs (from 80 KiB in all on 3 ranks, 512 KiB
 * on 2 and 4). allgather_as_allgatherv and bcast_as_allgatherv hand it such layouts: the core
 * refuses them where MPICH picks the ring (`size`, docs/variants.md), and Allgather's and
 * Bcast's per-rank layouts run to 70000 in the mock-up launch so that a build without that rule
 * aborts this launch (on 2 ranks as on 3). The irregular forms' stop at 4099 in every launch:
 * there MPICH 5.0.2's MPI_Allgatherv algorithms fail on 70000 of them on one rank only and the
 * other rank waits, so every class launch of every algorithm ran into the 60 s limit and the
 * MPICH proof past 10 minutes; the other collectives' stop at 4099 in the mock-up launch (a crash
 * there takes every mock-up's proof with it, a member's only its own launch: docs/select.md). */
static int st_mixed_swept(int coll, int count)
{
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    /* SMPI 3.32 ends the whole simulation on Allgather's 70000 per-rank layouts in the mock-up
     * launch (the proof then held one mock-up); it has no MPICH ring to guard against, so its
     * sweep keeps the bounds it had before the ring rule: Allgather's layouts stop at 65 there,
     * the others at 4099. */
    if (count <= 65) return 1;
    if (!st_member_active()) return count <= 4099 && coll != CT_COLL_ALLGATHER;
    return count <= 4099 || !st_is_irregular(coll);
#else
    if (count <= 4099 || coll == CT_COLL_ALLGATHER || coll == CT_COLL_BCAST) return 1;
    return st_member_active() && !st_is_irregular(coll);
#endif
}

/* The sized classes (ct_proof.h: 8-, 16-bit and float sums and products) on every communicator,
 * as the order of their combination changes with its size; the bands of the other classes on
 * MPI_COMM_WORLD where the matrix leaves them out (its counts stop at 1000, its 1 MiB cases
 * are MPI_INT sums and MPI_INT data movement; data movement at 70000 on the split too, where
 * 2-rank algorithms such as Open MPI's two_proc apply). */
static void st_run_sweep(const st_comm *comm, int coll, const st_type *sweep, const st_type *types,
                         const st_op *ops, st_buffers *b, st_log *log)
{
    static const int large[] = {4099, 70000};
    int world = comm->slot == 0;
    if (ct_collectives[coll].has_op) {
        /* Products of 8- and 16-bit integers wrap like their sums would without op/avx: the
         * sums decide those classes; wider integers are not sized, so world alone. */
        static const enum st_op_kind order_ops[] = {ST_SUM, ST_PROD};
        for (int t = 0; t < ST_SWEEP_TYPES; t++)
            for (int o = 0; o < 2; o++) {
                int narrow = sweep[t].kind == ST_RAW && sweep[t].size <= 2;
                if ((narrow && o == 1) || (!world && sweep[t].kind == ST_RAW && !narrow)) continue;
                for (int k = 0; k < ST_SWEEP_COUNTS; k++)
                    st_sweep_case(comm, coll, &sweep[t], &ops[order_ops[o]], st_sweep_counts[k], b,
                                  log);
            }
        st_proof_swept_size(comm->size);
        static const struct { enum st_kind type; enum st_op_kind op; } rest[] = {
            {ST_INT, ST_MAX}, {ST_INT, ST_BOR}, {ST_INT, ST_USER_COMM}, {ST_INT, ST_USER_NONCOMM},
            {ST_CONTIG, ST_USER_COMM}, {ST_CONTIG, ST_USER_NONCOMM}, {ST_BYTE, ST_BOR}};
        for (size_t i = 0; world && i < sizeof rest / sizeof *rest; i++)
            for (int k = 0; k < 2; k++)
                st_sweep_case(comm, coll, &types[rest[i].type], &ops[rest[i].op], large[k], b, log);
    } else {
        /* Per-rank layouts: as far as st_mixed_swept says. */
        static const int counts[] = {15, 16, 63, 64, 65, 4099, 70000};
        static const enum st_kind moved[] = {ST_BYTE, ST_MIXED};
        for (int t = 0; t < 2; t++)
            for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
                if ((moved[t] != ST_MIXED || st_mixed_swept(coll, counts[k]))
                    && (world || counts[k] == 70000))
                    st_sweep_case(comm, coll, &types[moved[t]], NULL, counts[k], b, log);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The differential fuzzer (--fuzz SEED --cases N): random cases, the same draw on every rank,
 * compared bit for bit like the sweep: a difference in a class the proof passed is a case the
 * matrix misses (benchmarks/proof/fuzz.py). */

static uint64_t st_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const st_op *st_fuzz_op(int coll, const st_type *type, const st_op *ops, uint64_t *state)
{
    if (!ct_collectives[coll].has_op) return NULL;
    for (int tries = 0; tries < 16; tries++) {
        const st_op *op = &ops[st_next(state) % ST_NUM_OPS];
        if (op->kind != ST_USER_COUNT && st_op_valid(op, type)) return op;
    }
    return NULL;
}

static void st_run_fuzz(const st_comm comms[2], int only, uint64_t seed, long cases,
                        const st_type *types, const st_type *sweep, const st_op *ops,
                        st_buffers *b, st_log logs[2])
{
    uint64_t state = seed;
    for (long i = 0; i < cases; i++) {
        int coll = only >= 0 ? only : (int)(st_next(&state) % CT_NUM_COLLECTIVES);
        int slot = (int)(st_next(&state) % 2);
        int t = (int)(st_next(&state) % (ST_NUM_TYPES + ST_SWEEP_TYPES));
        const st_type *type = t < ST_NUM_TYPES ? &types[t] : &sweep[t - ST_NUM_TYPES];
        const st_op *op = st_fuzz_op(coll, type, ops, &state);
        double u = (double)(st_next(&state) >> 11) / 9007199254740992.0;
        int count = (int)exp(u * log(100001.0)) - 1;
        uint64_t root = st_next(&state), in_place = st_next(&state) & 1;
        /* every draw is taken above whatever is skipped, so a seed names the same cases
         * whichever collectives the matrix describes */
        if (!st_geometry_known(coll) || (ct_collectives[coll].has_op && op == NULL)) continue;
        const st_comm *comm = &comms[slot];
        st_case c = {coll, comm, type, op, count,
                     ct_collectives[coll].has_root ? (int)(root % (uint64_t)comm->size) : -1,
                     (int)in_place && st_has_in_place(coll), 1, (unsigned)(seed * 1000003u + (uint64_t)i)};
        st_run_case(&c, b, &logs[slot]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Applicability probes: calls that are never run, only asked whether a variant applies. */

static void st_probe(const st_case *c, st_log *log)
{
    static char dummy_send[64], dummy_recv[64];
    const int *rc = NULL;
    if (c->coll == CT_COLL_REDUCE_SCATTER) {
        for (int i = 0; i < c->comm->size && i < 4096; i++) st_recvcounts_buf[i] = c->count;
        rc = st_recvcounts_buf;
    }
    ct_call call = {.coll = c->coll, .sendbuf = dummy_send, .recvbuf = dummy_recv,
                    .sendcount = c->count, .recvcount = c->count, .recvcounts = rc,
                    .sendtype = c->type->type, .recvtype = c->type->type,
                    .op = c->op ? c->op->op : MPI_OP_NULL, .root = c->root,
                    .comm = c->comm->comm};
    int64_t n = st_case_bytes(c, rc);
    for (int v = 0; v < CT_NUM_VARIANTS; v++) {
        if (ct_variants[v].coll != c->coll) continue;
        st_record rec = {v, colltune_applicable(v, &call), 0, 0, 0, 1, -1};
        colltune_reason expected = st_expected_reason(v, c, n, rc);
        if ((int)expected != rec.reason) {
            char detail[256];
            rec.wrong = 1;
            snprintf(detail, sizeof detail, "probe: colltune_applicable says %s, the rules say %s",
                     colltune_reason_name((colltune_reason)rec.reason),
                     colltune_reason_name(expected));
            st_report(c, v, "reason", detail);
        }
        st_log_add(log, rec);
    }
}

static void st_run_probes(const st_comm *world, const st_comm *inter, const st_type *types,
                          const st_op *ops, st_log *log)
{
    int p = world->size;
    int64_t cap = (int64_t)colltune_scratch_cap();
    for (int coll = 0; coll < CT_NUM_COLLECTIVES; coll++) {
        if (!st_geometry_known(coll)) continue;
        /* The irregular forms' rules read their counts arrays, which a probe does not have:
         * the intercommunicator probe only. */
        int by_count = coll != CT_COLL_GATHERV && coll != CT_COLL_SCATTERV
                       && coll != CT_COLL_ALLGATHERV && coll != CT_COLL_ALLTOALLV
                       && coll != CT_COLL_ALLTOALLW;
        const st_op *op = ct_collectives[coll].has_op ? &ops[ST_SUM] : NULL;
        int root = ct_collectives[coll].has_root ? 0 : -1;
        int per_rank = coll == CT_COLL_REDUCE_SCATTER_BLOCK || coll == CT_COLL_REDUCE_SCATTER;
        /* n around the cap: the variants whose scratch grows with n no longer fit. */
        int64_t at_cap = cap / 4 / (per_rank ? p : 1);
        int64_t counts[] = {1 << 30, at_cap < INT_MAX ? at_cap : INT_MAX};
        for (int k = 0; k < 2 && by_count; k++) {
            st_case c = {coll, world, &types[ST_INT], op, (int)counts[k], root, 0};
            st_probe(&c, log);
        }
        /* Bytes just below and at MPICH's ring bound (GL4: p blocks of n, GL9: n), asked on
         * every library: `size` on the MPICH family at the bound, applicable elsewhere. */
        for (int k = 0; k < 2 && (coll == CT_COLL_ALLGATHER || coll == CT_COLL_BCAST); k++) {
            int64_t bound = st_mpich_ring_bytes(p), blocks = coll == CT_COLL_ALLGATHER ? p : 1;
            int64_t first = (bound + blocks - 1) / blocks;   /* the fewest bytes refused */
            st_case c = {coll, world, &types[ST_BYTE], NULL, (int)(first - 1 + k), root, 0};
            st_probe(&c, log);
        }
        if (inter != NULL) {
            st_case c = {coll, inter, &types[ST_INT], op, 7, root, 0};
            st_probe(&c, log);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Merging the logs */

static int st_merge(const st_log *log, MPI_Comm comm, int count_here, st_tally *tally)
{
    size_t n = log->len;
    int *v = malloc((5 * n + 1) * sizeof *v);
    if (v == NULL) return MPI_ERR_NO_MEM;
    for (size_t i = 0; i < n; i++) {
        const st_record *r = &log->records[i];
        v[5 * i] = r->reason, v[5 * i + 1] = -r->reason, v[5 * i + 2] = r->wrong;
        v[5 * i + 3] = r->mismatch, v[5 * i + 4] = r->error;
    }
    int err = PMPI_Allreduce(MPI_IN_PLACE, v, (int)(5 * n), MPI_INT, MPI_MAX, comm);
    for (size_t i = 0; err == MPI_SUCCESS && count_here && i < n; i++) {
        const st_record *r = &log->records[i];
        st_tally *t = &tally[r->variant];
        int reason_max = v[5 * i], reason_min = -v[5 * i + 1];
        /* A mock-up refused where SMPI cannot take the class (st_smpi.c): tested and failed. */
        int refused = r->variant != ST_LIB_MEMBER && reason_max == COLLTUNE_NA_REFUSED
                      && reason_min == reason_max && v[5 * i + 4];
        if (!r->probe)
            st_proof_account(r->variant, r->cls, (reason_max == COLLTUNE_APPLICABLE
                             && reason_min == reason_max) || refused, reason_min != reason_max,
                             v[5 * i + 3] || v[5 * i + 4]);
        if (r->sweep) continue;   /* the proof's only */
        if (r->probe) {
            t->probes++;
            if (reason_min == reason_max) t->probe_reasons[reason_max]++;
        } else {
            t->cases++;
            if (reason_max == COLLTUNE_APPLICABLE && (v[5 * i + 3] || v[5 * i + 4]))
                t->failures++;
            else if (reason_max != COLLTUNE_APPLICABLE && reason_min == reason_max)
                t->na[reason_max]++;
        }
        if (reason_min != reason_max) t->nonuniform++;
        if (v[5 * i + 2]) t->wrong++;
    }
    free(v);
    return err;
}

static void st_print_results(const st_tally *tally, int p, double seconds, const char *library,
                             int arena_ok)
{
    long long cases = 0, failures = 0, wrong = 0, nonuniform = 0, probes = 0;
    for (int v = 0; v < CT_NUM_VARIANTS; v++) {
        const st_tally *t = &tally[v];
        printf("{\"type\":\"variant\",\"collective\":\"%s\",\"variant\":\"%s\",\"guideline\":\"%s\","
               "\"cases\":%lld,\"failures\":%lld,\"not_applicable\":{",
               colltune_collective_name(ct_variants[v].coll), ct_variants[v].name,
               ct_variants[v].guideline, t->cases, t->failures);
        int first = 1;
        for (int r = 1; r < COLLTUNE_REASON_COUNT; r++)
            if (t->na[r]) {
                printf("%s\"%s\":%lld", first ? "" : ",", colltune_reason_name((colltune_reason)r),
                       t->na[r]);
                first = 0;
            }
        printf("},\"reason_mismatches\":%lld,\"nonuniform\":%lld,\"probes\":%lld,"
               "\"probe_reasons\":{", t->wrong, t->nonuniform, t->probes);
        first = 1;
        for (int r = 0; r < COLLTUNE_REASON_COUNT; r++)
            if (t->probe_reasons[r]) {
                printf("%s\"%s\":%lld", first ? "" : ",",
                       colltune_reason_name((colltune_reason)r), t->probe_reasons[r]);
                first = 0;
            }
        printf("}}\n");
        cases += t->cases, failures += t->failures, wrong += t->wrong;
        nonuniform += t->nonuniform, probes += t->probes;
    }
    printf("{\"type\":\"summary\",\"nprocs\":%d,\"library\":\"%s\",\"cases\":%lld,\"failures\":%lld,"
           "\"reason_mismatches\":%lld,\"nonuniform\":%lld,\"probes\":%lld,\"seconds\":%.3f,"
           "\"scratch_cap\":%zu,\"chunk_bytes\":%zu,\"arena_ok\":%s}\n",
           p, library, cases, failures, wrong, nonuniform, probes, seconds, colltune_scratch_cap(),
           colltune_chunk_bytes(), arena_ok ? "true" : "false");
    fflush(stdout);
}

/* ------------------------------------------------------------------------------------------ */
/* One collective's cases on one communicator: the matrix, on world the 1 MiB and the adjacent
 * buffers, and with --sweep the proof's sweep. */

typedef struct st_cases {
    const st_type *types, *sweep_types;
    const st_op *ops;
    st_buffers *buffers;
    int quick, big, sweep;
} st_cases;

static void st_run_collective(const st_comm *comm, int coll, const st_cases *k, st_log *log)
{
    int i = comm->slot, data = coll != CT_COLL_BARRIER;
    st_run_matrix(comm, coll, k->types, k->ops, k->buffers, log, k->quick);
    if (k->big && i == 0 && data) st_run_big(comm, coll, k->types, k->ops, k->buffers, log, k->quick);
    if (i == 0 && data) st_run_adjacent(comm, coll, k->types, k->ops, k->buffers, log);
    if (k->sweep && i < 2 && data)   /* dup has world's size: nothing the sweep would not see */
        st_run_sweep(comm, coll, k->sweep_types, k->types, k->ops, k->buffers, log);
}

/* --by-class FIRST (with --member): the member's classes one at a time, in class order from
 * FIRST on, each merged and its verdict printed (the cumulative `proof` line) as soon as it is
 * done. When the member crashes or hangs, the proof fails the class that was running (the last
 * "class" line without its "class_done") and resumes after it, instead of a launch per class.
 * Each class walks the whole matrix, running only its own cases. */
static void st_run_by_class(st_comm comms[3], const st_comm topos[3], st_log logs[3],
                            const st_cases *k, int coll, const char *first_class,
                            const char *member, st_tally *tally)
{
    int first = st_class_first(first_class);
    if (first < 0) {
        if (st_world_rank == 0)
            fprintf(stderr, "colltune-selftest: --by-class: unknown class '%s'\n", first_class);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    ct_proof_set possible;
    ct_proof_possible(coll, &possible);
    for (int cls = first; cls < CT_PROOF_CLASSES; cls++) {
        if (!ct_proof_set_has(&possible, cls)) continue;
        if (st_world_rank == 0) st_class_print("class", cls);
        st_class_focus(cls);
        for (int i = 0; i < 3; i++) {   /* the records merge over the matrix's communicator */
            const st_comm *on = st_is_neighbor(coll) ? &topos[i] : &comms[i];
            if (on->comm != MPI_COMM_NULL) st_run_collective(on, coll, k, &logs[i]);
        }
        int status = MPI_SUCCESS;
        for (int i = 0; i < 3 && status == MPI_SUCCESS; i++) {
            status = st_merge(&logs[i], comms[i].comm, comms[i].rank == 0, tally);
            logs[i].len = 0;
        }
        if (status == MPI_SUCCESS) status = st_proof_finish(MPI_COMM_WORLD, st_world_rank, member);
        if (status != MPI_SUCCESS) {
            char err[256];
            st_error_text(status, err, sizeof err);
            fprintf(stderr, "colltune-selftest: merging class results failed: %s\n", err);
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (st_world_rank == 0) st_class_print("class_done", cls);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The scratch arena: reused without reallocation, grown on demand, capped, per communicator. */

static int st_check_arena(const st_comm *world, char *detail, size_t len)
{
    size_t cap = colltune_scratch_cap();
    size_t small = cap < 4096 ? cap : 4096;
    MPI_Comm comm;
    void *a = NULL, *b = NULL, *c = NULL, *other = NULL;
    int err = PMPI_Comm_dup(world->comm, &comm);
    if (err == MPI_SUCCESS) err = colltune_scratch(comm, small, &a);
    if (err == MPI_SUCCESS) err = colltune_scratch(comm, small / 2, &b);
    if (err == MPI_SUCCESS) err = colltune_scratch(comm, small, &c);
    if (err != MPI_SUCCESS) {
        snprintf(detail, len, "colltune_scratch failed below the cap");
        return 0;
    }
    if (a != b || b != c) {
        snprintf(detail, len, "a request the arena already covers moved it (%p, %p, %p)", a, b, c);
        return 0;
    }
    void *over = &over;
    if (colltune_scratch(comm, cap + 1, &over) != MPI_ERR_NO_MEM || over != NULL) {
        snprintf(detail, len, "a request over the cap (%zu bytes) did not fail with MPI_ERR_NO_MEM",
                 cap + 1);
        return 0;
    }
    if (colltune_scratch(world->comm, small, &other) != MPI_SUCCESS || other == a) {
        snprintf(detail, len, "two communicators share one arena");
        return 0;
    }
    /* The delete callback frees the block; a leak or double free shows under valgrind/ASan. */
    PMPI_Comm_free(&comm);
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* The neighborhood collectives' communicators: each of the matrix's with a topology (no
 * reordering: the same ranks, so a case's records merge over the matrix's communicator). World
 * as a periodic ring (1-D Cartesian: 1 or 2 ranks name one neighbour twice), split as a
 * distributed graph whose rank r sends to the r mod 3 ranks after it (degrees 0, 1, 2: zero
 * in- and out-degrees among them), dup as a periodic 2-D torus (MPI_Dims_create). */
static void st_topology(const st_comm *base, int kind, st_comm *out)
{
    static const char *const names[3] = {"world-ring", "split-graph", "dup-torus"};
    int q = base->size, r = base->rank;
    MPI_Comm topo = MPI_COMM_NULL;
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    /* SMPI 3.32 aborts in PMPI_Dist_graph_create_adjacent ("Not yet implemented",
     * src/smpi/bindings/smpi_mpi.cpp:426) and has no neighborhood collectives: no topology, so
     * the neighborhood rows run no case there and nothing of them is proven (none is served). */
    (void)q, (void)r;
#else
    if (kind == 1) {
        int nin = 0, nout = 0;
        int *srcs = malloc(sizeof(int) * (size_t)(2 * q + 2)), *dsts = srcs + q + 1;
        for (int k = 1; srcs != NULL && k <= r % 3 && k < q; k++) dsts[nout++] = (r + k) % q;
        for (int from = 0; srcs != NULL && from < q; from++)
            for (int k = 1; k <= from % 3 && k < q; k++)
                if ((from + k) % q == r) srcs[nin++] = from;
        PMPI_Dist_graph_create_adjacent(base->comm, nin, srcs, MPI_UNWEIGHTED, nout, dsts,
                                        MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &topo);
        free(srcs);
    } else {
        int nd = kind == 0 ? 1 : 2, dims[2] = {0, 0}, periods[2] = {1, 1};
        PMPI_Dims_create(q, nd, dims);
        PMPI_Cart_create(base->comm, nd, dims, periods, 0, &topo);
    }
#endif
    *out = *base;
    out->name = names[kind];
    out->comm = topo;
    if (topo != MPI_COMM_NULL) PMPI_Comm_set_errhandler(topo, MPI_ERRORS_RETURN);
}

/* ------------------------------------------------------------------------------------------ */

static void st_library_version(char *out)
{
    int len = 0;
    PMPI_Get_library_version(out, &len);
    out[len] = '\0';
    char *nl = strpbrk(out, "\r\n");
    if (nl) *nl = '\0';
    for (char *s = out; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) *s = ' ';
}

/* --list-members: the library's own algorithms the learning mode registers, for the proof. */
static int st_list_members(int *argc, char ***argv)
{
    int provided, rank;
    PMPI_Init(argc, argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS) {
        for (int coll = 0; coll < CT_NUM_COLLECTIVES && rank == 0; coll++) {
            if (!st_geometry_known(coll)) continue;   /* no proof for them yet: unserved */
            /* each form's (the persistent form reads the nonblocking form's variable) */
            static const char *const form_name[] = {"blocking", "nonblocking", "persistent"};
            static const unsigned row_form[] = {0, CT_ROW_NONBLOCKING, CT_ROW_PERSISTENT};
            for (int form = CT_FORM_BLOCKING; form <= CT_FORM_PERSISTENT; form++) {
                if (form != CT_FORM_BLOCKING && !(ct_collectives[coll].forms & row_form[form]))
                    continue;
                if (form == CT_FORM_PERSISTENT && !CT_HAVE_PERSISTENT) continue;
                char names[64][64];
                int n = ct_libalg_members(colltune_collective_name(coll), form != CT_FORM_BLOCKING,
                                          names, 64);
                printf("{\"type\":\"members\",\"collective\":\"%s\",\"form\":\"%s\","
                       "\"names\":[", colltune_collective_name(coll), form_name[form]);
                for (int i = 0; i < n; i++) printf("%s\"%s\"", i ? "," : "", names[i]);
                printf("]}\n");
            }
        }
        fflush(stdout);
        MPI_T_finalize();
    }
    PMPI_Finalize();
    return 0;
}

static int st_usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--no-big] [--quick] [--sweep] [--fuzz SEED [--cases N]] "
            "[--collective NAME] "
            "[--member lib:<collective>:<algorithm> [--classes CLASS,...] "
            "[--reference-out FILE | --reference-in FILE] [--by-class CLASS]]\n", argv0);
    return 2;
}

int main(int argc, char **argv)
{
    int big = 1, only = -1, quick = 0, sweep = 0;
    long fuzz_cases = -1;
    uint64_t fuzz_seed = 0;
    const char *member = NULL, *reference = NULL, *first_class = NULL;
    int reference_mode = ST_REFERENCE_NONE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-big") == 0) {
            big = 0;
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--sweep") == 0) {
            sweep = 1;
        } else if (strcmp(argv[i], "--fuzz") == 0 && i + 1 < argc) {
            fuzz_seed = strtoull(argv[++i], NULL, 10);
            if (fuzz_cases < 0) fuzz_cases = 1000;
        } else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) {
            fuzz_cases = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--list-members") == 0) {
            return st_list_members(&argc, &argv);
        } else if (strcmp(argv[i], "--member") == 0 && i + 1 < argc) {
            member = argv[++i];
        } else if ((strcmp(argv[i], "--reference-out") == 0 || strcmp(argv[i], "--reference-in") == 0)
                   && i + 1 < argc) {
            reference_mode = argv[i][12] == 'o' ? ST_REFERENCE_WRITE : ST_REFERENCE_READ;
            reference = argv[++i];
        } else if (strcmp(argv[i], "--classes") == 0 && i + 1 < argc) {
            st_parse_classes(argv[++i]);
        } else if (strcmp(argv[i], "--by-class") == 0 && i + 1 < argc) {
            first_class = argv[++i];
        } else if (strcmp(argv[i], "--collective") == 0 && i + 1 < argc) {
            only = colltune_collective_index(argv[++i]);
            if (only < 0) {
                fprintf(stderr, "colltune-selftest: unknown collective '%s'\n", argv[i]);
                return 2;
            }
        } else {
            return st_usage(argv[0]);
        }
    }
    if (first_class != NULL && (member == NULL || fuzz_cases >= 0)) {
        fprintf(stderr, "colltune-selftest: --by-class proves the --member's classes one at a time: "
                "give --member lib:<collective>:<algorithm>, without --fuzz\n");
        return st_usage(argv[0]);
    }
    PMPI_Init(&argc, &argv);
    colltune_mpich_ring_settings();   /* as the interposer's MPI_Init: the rules depend on it */
    double start = PMPI_Wtime();
    char err[256];
    if (st_rules_check_catalog(err, sizeof err) != 0) {
        fprintf(stderr, "colltune-selftest: %s\n", err);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    st_comm comms[3];
    int p, rank;
    PMPI_Comm_size(MPI_COMM_WORLD, &p);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    st_world_rank = rank;
    MPI_Comm split, dup, inter = MPI_COMM_NULL;
    PMPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split); /* reversed order inside */
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    const int have_intercomm = 0;   /* SMPI 3.32 aborts in PMPI_Intercomm_create ("Not yet
                                     * implemented", src/smpi/bindings/smpi_mpi.cpp:464) */
#else
    const int have_intercomm = 1;
#endif
    if (p >= 2 && have_intercomm) {
        /* Local rank 0 of each half is its highest world rank (keys are -rank). */
        int top_even = (p - 1) % 2 == 0 ? p - 1 : p - 2, top_odd = (p - 1) % 2 ? p - 1 : p - 2;
        PMPI_Intercomm_create(split, 0, MPI_COMM_WORLD, rank % 2 == 0 ? top_odd : top_even, 77,
                              &inter);
    }
    MPI_Comm handles[3] = {MPI_COMM_WORLD, split, dup};
    const char *names[3] = {"world", "split", "dup"};
    for (int i = 0; i < 3; i++) {
        PMPI_Comm_set_errhandler(handles[i], MPI_ERRORS_RETURN);
        comms[i] = (st_comm){names[i], i, handles[i], 0, 0, 0};
        PMPI_Comm_size(handles[i], &comms[i].size);
        PMPI_Comm_rank(handles[i], &comms[i].rank);
        st_smpi_init(&comms[i]);
    }
    st_comm topos[3];
    for (int i = 0; i < 3; i++) st_topology(&comms[i], i, &topos[i]);
    st_comm intercomm = {"intercomm", 3, inter, 0, 0, 1};
    if (inter != MPI_COMM_NULL) {
        PMPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        PMPI_Comm_size(inter, &intercomm.size);
        PMPI_Comm_rank(inter, &intercomm.rank);
    }
    int provided;
    if (reference != NULL && member == NULL) {
        if (rank == 0)
            fprintf(stderr, "colltune-selftest: --reference-%s %s: only with --member\n",
                    reference_mode == ST_REFERENCE_WRITE ? "out" : "in", reference);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (reference != NULL && st_reference_open(reference, reference_mode, rank) != 0) {
        /* Every rank says it: on several nodes the one that cannot is often not rank 0. */
        char host[MPI_MAX_PROCESSOR_NAME] = "";
        int len = 0;
        int why = errno;
        PMPI_Get_processor_name(host, &len);
        fprintf(stderr, "colltune-selftest: rank %d on %s: --reference-%s %s.%d: %s: "
                "cannot open this rank's reference file\n", rank, host,
                reference_mode == ST_REFERENCE_WRITE ? "out" : "in", reference, rank, strerror(why));
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (member != NULL) {
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        for (int i = 0; i < 3; i++)
            if (st_member_open(member, i, handles[i], &only, err, sizeof err) != MPI_SUCCESS) {
                if (rank == 0) fprintf(stderr, "colltune-selftest: %s\n", err);
                PMPI_Abort(MPI_COMM_WORLD, 2);
            }
    }
    st_type types[ST_NUM_TYPES], sweep_types[ST_SWEEP_TYPES];
    st_op ops[ST_NUM_OPS];
    st_types_init(types);
    st_sweep_types_init(sweep_types);
    st_ops_init(ops);
    char library[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    st_library_version(library);
    if (rank == 0) {
        printf("{\"type\":\"start\",\"nprocs\":%d,\"library\":\"%s\",\"variants\":%d}\n", p,
               library, CT_NUM_VARIANTS);
        fflush(stdout);
    }

    if (member != NULL && rank == 0) st_print_member_classes(only);
    st_buffers buffers = {0};
    st_log logs[3] = {{0}}, probe_log = {0};
    int steps = 0, done = 0;   /* the (communicator, collective) pairs the loop below runs */
    for (int i = 0; i < 3; i++)
        for (int coll = 0; coll < CT_NUM_COLLECTIVES; coll++)
            steps += (only < 0 || coll == only) && st_geometry_known(coll)
                     && (st_is_neighbor(coll) ? topos[i].comm : comms[i].comm) != MPI_COMM_NULL;
    if (fuzz_cases >= 0) {
        st_run_fuzz(comms, only, fuzz_seed, fuzz_cases, types, sweep_types, ops, &buffers, logs);
        steps = 0;
        if (rank == 0)
            printf("{\"type\":\"fuzz\",\"seed\":%llu,\"cases\":%ld}\n",
                   (unsigned long long)fuzz_seed, fuzz_cases);
    }
    st_tally tally[CT_NUM_VARIANTS + 1];   /* + the forced library member */
    memset(tally, 0, sizeof tally);
    st_cases cases = {types, sweep_types, ops, &buffers, quick, big, sweep};
    if (first_class != NULL)
        st_run_by_class(comms, topos, logs, &cases, only, first_class, member, tally);
    for (int i = 0; i < 3 && fuzz_cases < 0 && first_class == NULL; i++)
        for (int coll = 0; coll < CT_NUM_COLLECTIVES; coll++) {
            if ((only >= 0 && coll != only) || !st_geometry_known(coll)) continue;
            const st_comm *on = st_is_neighbor(coll) ? &topos[i] : &comms[i];
            if (on->comm == MPI_COMM_NULL) continue;
            st_run_collective(on, coll, &cases, &logs[i]);
            if (rank == 0) {
                printf("{\"type\":\"progress\",\"done\":%d,\"total\":%d,\"comm\":\"%s\","
                       "\"collective\":\"%s\"}\n", ++done, steps, comms[i].name,
                       colltune_collective_name(coll));
                fflush(stdout);
            }
        }
    if (member == NULL && fuzz_cases < 0)
        st_run_probes(&comms[0], inter != MPI_COMM_NULL ? &intercomm : NULL, types, ops, &probe_log);
    char arena_detail[256] = "";
    int arena_ok = st_check_arena(&comms[0], arena_detail, sizeof arena_detail);
    PMPI_Allreduce(MPI_IN_PLACE, &arena_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!arena_ok && arena_detail[0] != '\0')
        fprintf(stderr, "colltune-selftest: rank %d: arena: %s\n", rank, arena_detail);

    int status = MPI_SUCCESS;
    for (int i = 0; i < 3 && status == MPI_SUCCESS; i++)
        status = st_merge(&logs[i], comms[i].comm, comms[i].rank == 0, tally);
    if (status == MPI_SUCCESS) status = st_merge(&probe_log, MPI_COMM_WORLD, rank == 0, tally);
    if (status == MPI_SUCCESS)
        status = PMPI_Reduce(rank == 0 ? MPI_IN_PLACE : tally, tally,
                             ST_TALLY_LONGS * (CT_NUM_VARIANTS + 1), MPI_LONG_LONG, MPI_SUM, 0,
                             MPI_COMM_WORLD);
    if (status != MPI_SUCCESS) {
        st_error_text(status, err, sizeof err);
        fprintf(stderr, "colltune-selftest: merging the results failed: %s\n", err);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (status == MPI_SUCCESS) status = st_proof_finish(MPI_COMM_WORLD, rank, member);
    double seconds = PMPI_Wtime() - start;
    if (rank == 0) st_print_results(tally, p, seconds, library, arena_ok);

    for (int i = 0; i < 3; i++) free(logs[i].records);
    free(probe_log.records);
    free(buffers.send), free(buffers.recv), free(buffers.lib_recv), free(buffers.pristine);
    free(buffers.recv_input);
    st_reference_close();
    if (member != NULL) {
        st_member_close();
        MPI_T_finalize();   /* before MPI_Finalize: Open MPI segfaults the other way round */
    }
    if (inter != MPI_COMM_NULL) PMPI_Comm_free(&inter);
    for (int i = 0; i < 3; i++)
        if (topos[i].comm != MPI_COMM_NULL) PMPI_Comm_free(&topos[i].comm);
    PMPI_Comm_free(&split);
    PMPI_Comm_free(&dup);
    PMPI_Finalize();
    return 0;
}

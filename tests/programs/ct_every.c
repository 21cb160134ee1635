/* Every collective function of MPI-4.1, once each, with exact results (tests/test_every.py).
 *
 * For each collective: the blocking call, the nonblocking one completed by one of the Wait/Test
 * family (the eight in turn), the persistent one (MPI_Start or MPI_Startall, completed the same
 * way, then MPI_Request_free), and each one's large-count binding (_c) where the library is
 * MPI-4. Neighborhood collectives run on a periodic ring (MPI_Cart_create). Every result is
 * compared with its closed form; a wrong one prints "wrong <function>" and exits 1. Rank 0 prints
 * "every: <n> functions" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PERSISTENT 1
#else
#define PERSISTENT 0
#endif
#define LARGE (MPI_VERSION >= 4)
#define MAXP 16

static int rank, p, left, right, functions;
static int sb[MAXP], rb[MAXP], cnt1[MAXP], dsp[MAXP];
static MPI_Aint adsp[MAXP], bdsp[MAXP];
static MPI_Datatype types[MAXP];
#if LARGE
static MPI_Count ccnt1[MAXP];
#endif
static MPI_Comm ring;

static void wrong(const char *name, int at, int got, int want)
{
    printf("wrong %s rank %d at %d: %d, want %d\n", name, rank, at, got, want);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void reset(void)
{
    for (int i = 0; i < MAXP; i++)
        rb[i] = -1;
}

/* Completes `rq` with the next of the Wait/Test family, in turn. Not MPI_Testall for a
 * persistent request: MPICH 5.0.2's returns MPI_ERR_IN_STATUS (with MPI_SUCCESS in the status)
 * when it completes a started persistent collective. */
static void complete(MPI_Request *rq, int persistent)
{
    static int turn;
    int flag = 0, idx, out, idxs[1];
    int k = turn++ % 8;
    if (persistent && k == 5)
        k = turn++ % 8;
    switch (k) {
    case 0: MPI_Wait(rq, MPI_STATUS_IGNORE); break;
    case 1: MPI_Waitall(1, rq, MPI_STATUSES_IGNORE); break;
    case 2: MPI_Waitany(1, rq, &idx, MPI_STATUS_IGNORE); break;
    case 3: MPI_Waitsome(1, rq, &out, idxs, MPI_STATUSES_IGNORE); break;
    case 4: while (!flag) MPI_Test(rq, &flag, MPI_STATUS_IGNORE); break;
    case 5: while (!flag) MPI_Testall(1, rq, &flag, MPI_STATUSES_IGNORE); break;
    case 6: while (!flag) MPI_Testany(1, rq, &idx, &flag, MPI_STATUS_IGNORE); break;
    default:
        for (out = 0; out == 0;) MPI_Testsome(1, rq, &out, idxs, MPI_STATUSES_IGNORE);
        break;
    }
}

static void start(MPI_Request *rq)
{
    static int turn;
    if (turn++ % 2)
        MPI_Startall(1, rq);
    else
        MPI_Start(rq);
}

/* The three forms of one call: blocking B, nonblocking I (into `rq`), persistent S (into `rq`),
 * each followed by the check C. */
#define FORMS3(name, B, I, S, C) do { \
        reset(); B; C; functions++; \
        { MPI_Request rq; reset(); I; complete(&rq, 0); C; functions++; } \
        if (PERSISTENT) { MPI_Request rq; reset(); S; start(&rq); complete(&rq, 1); C; \
                          MPI_Request_free(&rq); functions++; } \
    } while (0)

#define WANT(name, i, want) (rb[i] != (want) ? wrong(name, i, rb[i], (want)) : (void)0)

#if PERSISTENT
#define P_(x) x
#else
#define P_(x) (void)0
#endif
#if LARGE
#define L_(x) x
#else
#define L_(x) (void)0
#endif

static void rooted(void)
{
    /* bcast */
#define CB (WANT("bcast", 0, 42), WANT("bcast", 1, 43))
#define SETB (rb[0] = rank == 0 ? 42 : -1, rb[1] = rank == 0 ? 43 : -1)
    FORMS3("bcast", (SETB, MPI_Bcast(rb, 2, MPI_INT, 0, MPI_COMM_WORLD)),
           (SETB, MPI_Ibcast(rb, 2, MPI_INT, 0, MPI_COMM_WORLD, &rq)),
           P_((SETB, MPI_Bcast_init(rb, 2, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq))), CB);
    L_(FORMS3("bcast_c", (SETB, MPI_Bcast_c(rb, 2, MPI_INT, 0, MPI_COMM_WORLD)),
              (SETB, MPI_Ibcast_c(rb, 2, MPI_INT, 0, MPI_COMM_WORLD, &rq)),
              (SETB, MPI_Bcast_init_c(rb, 2, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CB));
    /* gather, gatherv */
#define CG if (rank == 0) for (int i = 0; i < p; i++) WANT("gather", i, i + 1)
    sb[0] = rank + 1;
    FORMS3("gather", MPI_Gather(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD),
           MPI_Igather(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq),
           P_(MPI_Gather_init(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CG);
    L_(FORMS3("gather_c", MPI_Gather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD),
              MPI_Igather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq),
              MPI_Gather_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CG));
    FORMS3("gatherv", MPI_Gatherv(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, 0, MPI_COMM_WORLD),
           MPI_Igatherv(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, 0, MPI_COMM_WORLD, &rq),
           P_(MPI_Gatherv_init(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CG);
    L_(FORMS3("gatherv_c", MPI_Gatherv_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, 0, MPI_COMM_WORLD),
              MPI_Igatherv_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, 0, MPI_COMM_WORLD, &rq),
              MPI_Gatherv_init_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CG));
    /* scatter, scatterv */
#define CS WANT("scatter", 0, 10 * rank)
    for (int i = 0; i < p; i++)
        sb[i] = 10 * i;
    FORMS3("scatter", MPI_Scatter(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD),
           MPI_Iscatter(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq),
           P_(MPI_Scatter_init(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CS);
    L_(FORMS3("scatter_c", MPI_Scatter_c(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD),
              MPI_Iscatter_c(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq),
              MPI_Scatter_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CS));
    FORMS3("scatterv", MPI_Scatterv(sb, cnt1, dsp, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD),
           MPI_Iscatterv(sb, cnt1, dsp, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq),
           P_(MPI_Scatterv_init(sb, cnt1, dsp, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CS);
    L_(FORMS3("scatterv_c", MPI_Scatterv_c(sb, ccnt1, adsp, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD),
              MPI_Iscatterv_c(sb, ccnt1, adsp, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq),
              MPI_Scatterv_init_c(sb, ccnt1, adsp, MPI_INT, rb, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CS));
    /* reduce */
#define CR if (rank == 0) WANT("reduce", 0, p * (p + 1) / 2)
    sb[0] = rank + 1;
    FORMS3("reduce", MPI_Reduce(sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD),
           MPI_Ireduce(sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &rq),
           P_(MPI_Reduce_init(sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CR);
    L_(FORMS3("reduce_c", MPI_Reduce_c(sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD),
              MPI_Ireduce_c(sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &rq),
              MPI_Reduce_init_c(sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CR));
}

static void all_to_all(void)
{
    /* barrier */
    FORMS3("barrier", MPI_Barrier(MPI_COMM_WORLD), MPI_Ibarrier(MPI_COMM_WORLD, &rq),
           P_(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), (void)0);
    /* allgather, allgatherv */
#define CAG for (int i = 0; i < p; i++) WANT("allgather", i, i + 1)
    sb[0] = rank + 1;
    FORMS3("allgather", MPI_Allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
           MPI_Iallgather(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &rq),
           P_(MPI_Allgather_init(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CAG);
    L_(FORMS3("allgather_c", MPI_Allgather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
              MPI_Iallgather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &rq),
              MPI_Allgather_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CAG));
    FORMS3("allgatherv", MPI_Allgatherv(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, MPI_COMM_WORLD),
           MPI_Iallgatherv(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, MPI_COMM_WORLD, &rq),
           P_(MPI_Allgatherv_init(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CAG);
    L_(FORMS3("allgatherv_c", MPI_Allgatherv_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, MPI_COMM_WORLD),
              MPI_Iallgatherv_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, MPI_COMM_WORLD, &rq),
              MPI_Allgatherv_init_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CAG));
    /* alltoall, alltoallv, alltoallw */
#define CAA for (int i = 0; i < p; i++) WANT("alltoall", i, 100 * i + rank)
    for (int j = 0; j < p; j++)
        sb[j] = 100 * rank + j;
    FORMS3("alltoall", MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
           MPI_Ialltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &rq),
           P_(MPI_Alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CAA);
    L_(FORMS3("alltoall_c", MPI_Alltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
              MPI_Ialltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &rq),
              MPI_Alltoall_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CAA));
    FORMS3("alltoallv", MPI_Alltoallv(sb, cnt1, dsp, MPI_INT, rb, cnt1, dsp, MPI_INT, MPI_COMM_WORLD),
           MPI_Ialltoallv(sb, cnt1, dsp, MPI_INT, rb, cnt1, dsp, MPI_INT, MPI_COMM_WORLD, &rq),
           P_(MPI_Alltoallv_init(sb, cnt1, dsp, MPI_INT, rb, cnt1, dsp, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CAA);
    L_(FORMS3("alltoallv_c", MPI_Alltoallv_c(sb, ccnt1, adsp, MPI_INT, rb, ccnt1, adsp, MPI_INT, MPI_COMM_WORLD),
              MPI_Ialltoallv_c(sb, ccnt1, adsp, MPI_INT, rb, ccnt1, adsp, MPI_INT, MPI_COMM_WORLD, &rq),
              MPI_Alltoallv_init_c(sb, ccnt1, adsp, MPI_INT, rb, ccnt1, adsp, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CAA));
    int bd[MAXP];
    for (int j = 0; j < p; j++)
        bd[j] = j * (int)sizeof(int);
    FORMS3("alltoallw", MPI_Alltoallw(sb, cnt1, bd, types, rb, cnt1, bd, types, MPI_COMM_WORLD),
           MPI_Ialltoallw(sb, cnt1, bd, types, rb, cnt1, bd, types, MPI_COMM_WORLD, &rq),
           P_(MPI_Alltoallw_init(sb, cnt1, bd, types, rb, cnt1, bd, types, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CAA);
    L_(FORMS3("alltoallw_c", MPI_Alltoallw_c(sb, ccnt1, bdsp, types, rb, ccnt1, bdsp, types, MPI_COMM_WORLD),
              MPI_Ialltoallw_c(sb, ccnt1, bdsp, types, rb, ccnt1, bdsp, types, MPI_COMM_WORLD, &rq),
              MPI_Alltoallw_init_c(sb, ccnt1, bdsp, types, rb, ccnt1, bdsp, types, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CAA));
}

static void reductions(void)
{
#define CAR WANT("allreduce", 0, p * (p + 1) / 2)
    sb[0] = rank + 1;
    FORMS3("allreduce", MPI_Allreduce(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_Iallreduce(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
           P_(MPI_Allreduce_init(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CAR);
    L_(FORMS3("allreduce_c", MPI_Allreduce_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              MPI_Iallreduce_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
              MPI_Allreduce_init_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CAR));
#define CSC WANT("scan", 0, (rank + 1) * (rank + 2) / 2)
    FORMS3("scan", MPI_Scan(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_Iscan(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
           P_(MPI_Scan_init(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CSC);
    L_(FORMS3("scan_c", MPI_Scan_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              MPI_Iscan_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
              MPI_Scan_init_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CSC));
#define CEX if (rank > 0) WANT("exscan", 0, rank * (rank + 1) / 2)
    FORMS3("exscan", MPI_Exscan(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_Iexscan(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
           P_(MPI_Exscan_init(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CEX);
    L_(FORMS3("exscan_c", MPI_Exscan_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              MPI_Iexscan_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
              MPI_Exscan_init_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CEX));
    /* reduce_scatter(_block): rank r's block is sum over i of (i + r) */
#define CRS WANT("reduce_scatter", 0, p * (p - 1) / 2 + p * rank)
    for (int j = 0; j < p; j++)
        sb[j] = rank + j;
    FORMS3("reduce_scatter", MPI_Reduce_scatter(sb, rb, cnt1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_Ireduce_scatter(sb, rb, cnt1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
           P_(MPI_Reduce_scatter_init(sb, rb, cnt1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CRS);
    L_(FORMS3("reduce_scatter_c", MPI_Reduce_scatter_c(sb, rb, ccnt1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              MPI_Ireduce_scatter_c(sb, rb, ccnt1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
              MPI_Reduce_scatter_init_c(sb, rb, ccnt1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CRS));
    FORMS3("reduce_scatter_block", MPI_Reduce_scatter_block(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_Ireduce_scatter_block(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
           P_(MPI_Reduce_scatter_block_init(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq)), CRS);
    L_(FORMS3("reduce_scatter_block_c", MPI_Reduce_scatter_block_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              MPI_Ireduce_scatter_block_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq),
              MPI_Reduce_scatter_block_init_c(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq), CRS));
    /* reduce_local: blocking only */
    int in[2] = {1, 2};
    rb[0] = 10, rb[1] = 20;
    MPI_Reduce_local(in, rb, 2, MPI_INT, MPI_SUM);
    WANT("reduce_local", 0, 11), WANT("reduce_local", 1, 22), functions++;
#if LARGE
    rb[0] = 10, rb[1] = 20;
    MPI_Reduce_local_c(in, rb, 2, MPI_INT, MPI_SUM);
    WANT("reduce_local_c", 0, 11), WANT("reduce_local_c", 1, 22), functions++;
#endif
}

/* On the ring: neighbour 0 is the left one (source of the shift), 1 the right one. */
static void neighborhood(void)
{
#define CNG WANT("neighbor_allgather", 0, left + 1), WANT("neighbor_allgather", 1, right + 1)
    sb[0] = rank + 1;
    FORMS3("neighbor_allgather", MPI_Neighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, ring),
           MPI_Ineighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &rq),
           P_(MPI_Neighbor_allgather_init(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, MPI_INFO_NULL, &rq)), CNG);
    L_(FORMS3("neighbor_allgather_c", MPI_Neighbor_allgather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring),
              MPI_Ineighbor_allgather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &rq),
              MPI_Neighbor_allgather_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, MPI_INFO_NULL, &rq), CNG));
    FORMS3("neighbor_allgatherv", MPI_Neighbor_allgatherv(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, ring),
           MPI_Ineighbor_allgatherv(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, ring, &rq),
           P_(MPI_Neighbor_allgatherv_init(sb, 1, MPI_INT, rb, cnt1, dsp, MPI_INT, ring, MPI_INFO_NULL, &rq)), CNG);
    L_(FORMS3("neighbor_allgatherv_c", MPI_Neighbor_allgatherv_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, ring),
              MPI_Ineighbor_allgatherv_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, ring, &rq),
              MPI_Neighbor_allgatherv_init_c(sb, 1, MPI_INT, rb, ccnt1, adsp, MPI_INT, ring, MPI_INFO_NULL, &rq), CNG));
    /* to the left goes sb[0], to the right sb[1]: from the left comes its sb[1] */
#define CNA WANT("neighbor_alltoall", 0, 100 * left + 1), WANT("neighbor_alltoall", 1, 100 * right)
    sb[0] = 100 * rank, sb[1] = 100 * rank + 1;
    FORMS3("neighbor_alltoall", MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring),
           MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &rq),
           P_(MPI_Neighbor_alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, MPI_INFO_NULL, &rq)), CNA);
    L_(FORMS3("neighbor_alltoall_c", MPI_Neighbor_alltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring),
              MPI_Ineighbor_alltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &rq),
              MPI_Neighbor_alltoall_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, MPI_INFO_NULL, &rq), CNA));
    FORMS3("neighbor_alltoallv", MPI_Neighbor_alltoallv(sb, cnt1, dsp, MPI_INT, rb, cnt1, dsp, MPI_INT, ring),
           MPI_Ineighbor_alltoallv(sb, cnt1, dsp, MPI_INT, rb, cnt1, dsp, MPI_INT, ring, &rq),
           P_(MPI_Neighbor_alltoallv_init(sb, cnt1, dsp, MPI_INT, rb, cnt1, dsp, MPI_INT, ring, MPI_INFO_NULL, &rq)), CNA);
    L_(FORMS3("neighbor_alltoallv_c", MPI_Neighbor_alltoallv_c(sb, ccnt1, adsp, MPI_INT, rb, ccnt1, adsp, MPI_INT, ring),
              MPI_Ineighbor_alltoallv_c(sb, ccnt1, adsp, MPI_INT, rb, ccnt1, adsp, MPI_INT, ring, &rq),
              MPI_Neighbor_alltoallv_init_c(sb, ccnt1, adsp, MPI_INT, rb, ccnt1, adsp, MPI_INT, ring, MPI_INFO_NULL, &rq), CNA));
    FORMS3("neighbor_alltoallw", MPI_Neighbor_alltoallw(sb, cnt1, bdsp, types, rb, cnt1, bdsp, types, ring),
           MPI_Ineighbor_alltoallw(sb, cnt1, bdsp, types, rb, cnt1, bdsp, types, ring, &rq),
           P_(MPI_Neighbor_alltoallw_init(sb, cnt1, bdsp, types, rb, cnt1, bdsp, types, ring, MPI_INFO_NULL, &rq)), CNA);
    L_(FORMS3("neighbor_alltoallw_c", MPI_Neighbor_alltoallw_c(sb, ccnt1, bdsp, types, rb, ccnt1, bdsp, types, ring),
              MPI_Ineighbor_alltoallw_c(sb, ccnt1, bdsp, types, rb, ccnt1, bdsp, types, ring, &rq),
              MPI_Neighbor_alltoallw_init_c(sb, ccnt1, bdsp, types, rb, ccnt1, bdsp, types, ring, MPI_INFO_NULL, &rq), CNA));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p > MAXP)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < MAXP; i++) {
        cnt1[i] = 1, dsp[i] = i, adsp[i] = i, bdsp[i] = (MPI_Aint)(i * sizeof(int));
        types[i] = MPI_INT;
#if LARGE
        ccnt1[i] = 1;
#endif
    }
    int dims[1] = {p}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    rooted();
    all_to_all();
    reductions();
    neighborhood();
    MPI_Comm_free(&ring);
    if (rank == 0)
        printf("every: %d functions\n", functions);
    MPI_Finalize();
    return 0;
}

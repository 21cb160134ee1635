/*
 * A call's cost in wall time, measured in one process (issue 34, seventeenth round; run by
 * callcost.py). OpenFOAM's pattern on 2 ranks: between two MPI calls a few microseconds of the
 * application's own work, which streams through memory and runs through more code than the L1
 * caches hold (as a real code's does, so that what the call path brings into the caches evicts
 * the application's lines and the other way round); the collectives through a "layer" function
 * in a shared library of its own (Foam::reduce in libPstream.so) called from 35 application
 * call sites, each with a frame of its own size (so the chains are like Foam::reduce's); halo
 * exchanges (Irecv, Isend, Waitall(2)) through the layer too, from 10 call sites.
 *
 * The host's noise (other processes, the hypervisor) is far larger than a call's cost when two
 * runs are compared, so the comparison is made inside one run: it is cut in rounds of four short
 * phases (~200 us), two in which the layer calls MPI_* (V: through the preloaded interposer, for
 * the kinds of `mask`) and two in which it calls PMPI_* (B: the library directly, the interposer
 * never entered), in one of the six orders of VVBB drawn at random each round. Each phase's wall
 * time and each round's context switches go to a file at the end; a round's
 * (V1 + V2 - B1 - B2) / 2 over a V phase's intercepted calls is the cost of a call in ns
 * (callcost.py: the rounds in which no rank was switched out, intervals). The same source builds
 * the layer (-DCC_LAYER -shared) and the program.
 *
 *   callcost OUT GAP_NS EVICT MASK ROUNDS WARM PHASE_US COMM
 *     OUT: rank r's phases to OUT.r; GAP_NS: the work before each call (0: none); EVICT: 1 the
 *     work runs through 384 functions and 2 x 384 KB, 0 one function and 2 x 2 KB; MASK: the
 *     kinds V routes through MPI_* (1 Allreduce, 2 Isend, 4 Irecv, 8 Waitall); ROUNDS rounds
 *     after WARM unrecorded ones; PHASE_US: a phase's target length; COMM: world (the two ranks
 *     together, as OpenFOAM) or self (each rank alone, on MPI_COMM_SELF).
 *   CALLCOST_CUT=bits: see main (a measurement build's parts switched off in the B phases).
 */
#include <mpi.h>

enum { CC_ALLREDUCE = 1, CC_ISEND = 2, CC_IRECV = 4, CC_WAITALL = 8 };

#ifdef CC_LAYER
/* ---- the layer (libcallcost_layer.so) ------------------------------------------------------ */
/* The kinds routed through MPI_* (the interposer where it is preloaded), else PMPI_*. Read on
 * every call in both cases: the two paths differ only by the function called. Each call's
 * return code is used after it, so that neither is a tail call (a tail call would drop the
 * layer's frame from the chain, which OpenFOAM's layer keeps). */
int cc_via;
long cc_errors;

__attribute__((noinline)) void cc_reduce(double *v, int n, MPI_Comm comm)
{
    double out[2];
    int rc = (cc_via & CC_ALLREDUCE) ? MPI_Allreduce(v, out, n, MPI_DOUBLE, MPI_SUM, comm)
                                     : PMPI_Allreduce(v, out, n, MPI_DOUBLE, MPI_SUM, comm);
    cc_errors += rc != MPI_SUCCESS;
    for (int i = 0; i < n; i++)
        v[i] = out[i];
}

__attribute__((noinline)) void cc_isend(const double *buf, int n, int dest, int tag,
                                        MPI_Comm comm, MPI_Request *r)
{
    int rc = (cc_via & CC_ISEND) ? MPI_Isend(buf, n, MPI_DOUBLE, dest, tag, comm, r)
                                 : PMPI_Isend(buf, n, MPI_DOUBLE, dest, tag, comm, r);
    cc_errors += rc != MPI_SUCCESS;
}

__attribute__((noinline)) void cc_irecv(double *buf, int n, int src, int tag, MPI_Comm comm,
                                        MPI_Request *r)
{
    int rc = (cc_via & CC_IRECV) ? MPI_Irecv(buf, n, MPI_DOUBLE, src, tag, comm, r)
                                 : PMPI_Irecv(buf, n, MPI_DOUBLE, src, tag, comm, r);
    cc_errors += rc != MPI_SUCCESS;
}

__attribute__((noinline)) void cc_waitall(int n, MPI_Request *r)
{
    int rc = (cc_via & CC_WAITALL) ? MPI_Waitall(n, r, MPI_STATUSES_IGNORE)
                                   : PMPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    cc_errors += rc != MPI_SUCCESS;
}

#else
/* ---- the program ------------------------------------------------------------------------- */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <time.h>

extern int cc_via;
extern long cc_errors;
void cc_reduce(double *v, int n, MPI_Comm comm);
void cc_isend(const double *buf, int n, int dest, int tag, MPI_Comm comm, MPI_Request *r);
void cc_irecv(double *buf, int n, int src, int tag, MPI_Comm comm, MPI_Request *r);
void cc_waitall(int n, MPI_Request *r);

/* The application's work: chunks of CHUNK doubles, a[i] = a[i] * x + b[i] * y, each chunk by
 * the next of NF functions (distinct constants: distinct code, ~200 B each, ~80 KB in all,
 * more than the 32 KB L1i) at the next place of two arrays (2 x 384 KB: the L1d's 32 KB are
 * replaced several times a gap, L2's 1 MB partly). Without eviction: one function, 2 KB. */
#define CHUNK 64
#define NF 384
#define STEP(k)                                                                              \
    static __attribute__((noinline)) void cc_w##k(double *restrict a, const double *restrict b) \
    {                                                                                        \
        for (int i = 0; i < CHUNK; i++)                                                      \
            a[i] = a[i] * (0.999999 - (k) * 1e-9) + b[i] * (1e-6 + (k) * 1e-12);            \
    }
#define STEP4(k) STEP(k##0) STEP(k##1) STEP(k##2) STEP(k##3)
#define STEP16(k) STEP4(k##0) STEP4(k##1) STEP4(k##2) STEP4(k##3)
#define STEP64(k) STEP16(k##0) STEP16(k##1) STEP16(k##2) STEP16(k##3)
STEP64(10) STEP64(11) STEP64(12) STEP64(13) STEP64(20) STEP64(21)
#define NAME(k) cc_w##k,
#define NAME4(k) NAME(k##0) NAME(k##1) NAME(k##2) NAME(k##3)
#define NAME16(k) NAME4(k##0) NAME4(k##1) NAME4(k##2) NAME4(k##3)
#define NAME64(k) NAME16(k##0) NAME16(k##1) NAME16(k##2) NAME16(k##3)
typedef void (*cc_step)(double *restrict, const double *restrict);
static cc_step cc_steps[NF] = {NAME64(10) NAME64(11) NAME64(12) NAME64(13) NAME64(20)
                                   NAME64(21)};

static double *cc_a, *cc_b;
static size_t cc_chunks;       /* the arrays' chunks */
static size_t cc_at;           /* the next chunk */
static unsigned cc_fn;         /* the next function */
static int cc_evict;
static long cc_gap_chunks;     /* the work before each call */

static void cc_work(long chunks)
{
    for (long c = 0; c < chunks; c++) {
        if (cc_evict) {
            cc_steps[cc_fn](cc_a + cc_at * CHUNK, cc_b + cc_at * CHUNK);
            cc_fn = cc_fn + 1 == NF ? 0 : cc_fn + 1;
            cc_at = cc_at + 1 == cc_chunks ? 0 : cc_at + 1;
        } else {
            cc_w10000(cc_a + cc_at * CHUNK, cc_b);
            cc_at = cc_at + 1 == cc_chunks ? 0 : cc_at + 1;
        }
    }
}

static MPI_Comm cc_comm;
static int cc_rank, cc_other;
static double cc_sink;

/* 35 reduction sites (Foam::reduce's callers), each with a frame of its own size (its anchor,
 * as OpenFOAM's callers' frames differ), reducing 1 or 2 doubles. */
#define NRED 35
#define RED(k)                                                                               \
    static __attribute__((noinline)) void cc_red##k(void)                                    \
    {                                                                                        \
        volatile char pad[16 * ((k) % 8) + 8];                                               \
        pad[0] = (char)(k);                                                                  \
        double v[2] = {cc_sink * 1e-9 + (k), 1.0};                                           \
        cc_work(cc_gap_chunks);                                                              \
        cc_reduce(v, 1 + (k) % 2, cc_comm);                                                  \
        cc_sink += v[0] * 1e-12 + pad[0];                                                    \
    }
RED(0) RED(1) RED(2) RED(3) RED(4) RED(5) RED(6) RED(7) RED(8) RED(9) RED(10) RED(11) RED(12)
RED(13) RED(14) RED(15) RED(16) RED(17) RED(18) RED(19) RED(20) RED(21) RED(22) RED(23) RED(24)
RED(25) RED(26) RED(27) RED(28) RED(29) RED(30) RED(31) RED(32) RED(33) RED(34)
static void (*const cc_reds[NRED])(void) = {
    cc_red0,  cc_red1,  cc_red2,  cc_red3,  cc_red4,  cc_red5,  cc_red6,  cc_red7,  cc_red8,
    cc_red9,  cc_red10, cc_red11, cc_red12, cc_red13, cc_red14, cc_red15, cc_red16, cc_red17,
    cc_red18, cc_red19, cc_red20, cc_red21, cc_red22, cc_red23, cc_red24, cc_red25, cc_red26,
    cc_red27, cc_red28, cc_red29, cc_red30, cc_red31, cc_red32, cc_red33, cc_red34};

/* 10 halo exchange sites: a processor patch's 40 values each way (OpenFOAM 40x40 on 2 ranks). */
#define NHALO 10
#define HALO_N 40
static double cc_send[NHALO][HALO_N], cc_recv[NHALO][HALO_N];
#define HALO(k)                                                                              \
    static __attribute__((noinline)) void cc_halo##k(void)                                   \
    {                                                                                        \
        volatile char pad[24 * ((k) % 5) + 8];                                               \
        pad[0] = (char)(k);                                                                  \
        MPI_Request r[2];                                                                    \
        cc_work(cc_gap_chunks);                                                              \
        cc_irecv(cc_recv[k], HALO_N, cc_other, 100 + (k), cc_comm, &r[0]);                   \
        cc_work(cc_gap_chunks);                                                              \
        cc_send[k][0] = cc_sink;                                                             \
        cc_isend(cc_send[k], HALO_N, cc_other, 100 + (k), cc_comm, &r[1]);                   \
        cc_work(cc_gap_chunks);                                                              \
        cc_waitall(2, r);                                                                    \
        cc_sink += cc_recv[k][1] * 1e-12 + pad[0];                                           \
    }
HALO(0) HALO(1) HALO(2) HALO(3) HALO(4) HALO(5) HALO(6) HALO(7) HALO(8) HALO(9)
static void (*const cc_halos[NHALO])(void) = {cc_halo0, cc_halo1, cc_halo2, cc_halo3, cc_halo4,
                                              cc_halo5, cc_halo6, cc_halo7, cc_halo8, cc_halo9};

/* A unit: one halo exchange, two reductions (OpenFOAM: ~2.2 Allreduce a Waitall, an Isend and
 * an Irecv a Waitall). The sequence's period: 70 units (35 and 10 sites). */
static __attribute__((noinline)) void cc_unit(long u)
{
    cc_halos[u % NHALO]();
    cc_reds[(2 * u) % NRED]();
    cc_reds[(2 * u + 1) % NRED]();
}

static __attribute__((noinline)) void cc_phase(long u0, long units)
{
    for (long u = u0; u < u0 + units; u++)
        cc_unit(u);
}

static uint64_t cc_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 9) {
        fprintf(stderr, "usage: callcost OUT GAP_NS EVICT MASK ROUNDS WARM PHASE_US COMM\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *out = argv[1];
    double gap_ns = atof(argv[2]);
    cc_evict = atoi(argv[3]);
    int mask = atoi(argv[4]);
    long rounds = atol(argv[5]), warm = atol(argv[6]);
    double phase_us = atof(argv[7]);
    int self = strcmp(argv[8], "self") == 0;
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &cc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "callcost: 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* self: each rank on its own, its calls on MPI_COMM_SELF (the halo to itself), so that a
     * rank switched out does not stretch the other's phase */
    cc_other = self ? 0 : 1 - cc_rank;
    cc_comm = self ? MPI_COMM_SELF : MPI_COMM_WORLD;
    size_t bytes = cc_evict ? 384 * 1024 : 2048;
    cc_chunks = bytes / sizeof(double) / CHUNK;
    cc_a = aligned_alloc(64, bytes);
    cc_b = aligned_alloc(64, bytes);
    for (size_t i = 0; i < bytes / sizeof(double); i++)
        cc_a[i] = 1.0 + (double)i * 1e-9, cc_b[i] = 1.0 - (double)i * 1e-9;

    /* the work's speed: a chunk's ns, the faster of the two ranks' best of 20 (the same number
     * of chunks on both ranks, so that neither waits for the other by design) */
    double best = 1e30;
    for (int t = 0; t < 20; t++) {
        uint64_t t0 = cc_ns(CLOCK_MONOTONIC);
        cc_work(2000);
        double ns = (double)(cc_ns(CLOCK_MONOTONIC) - t0) / 2000;
        best = ns < best ? ns : best;
    }
    double chunk_ns;
    PMPI_Allreduce(&best, &chunk_ns, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    cc_gap_chunks = gap_ns > 0 ? (long)(gap_ns / chunk_ns + 0.5) : 0;
    if (gap_ns > 0 && cc_gap_chunks == 0)
        cc_gap_chunks = 1;
    /* a phase: the units near phase_us (a call ~1 us besides its gap) */
    double unit_ns = 5 * ((double)cc_gap_chunks * chunk_ns + 1000);
    long units = (long)(phase_us * 1000 / unit_ns + 0.5);
    if (units < 1)
        units = 1;
    int via_calls = 2 * !!(mask & CC_ALLREDUCE) + !!(mask & CC_ISEND) + !!(mask & CC_IRECV)
                    + !!(mask & CC_WAITALL);

    /* Kept in memory, written at the end (a line written between two phases was a cache
     * disturbance in the phase after it). Per round its three phases' wall times; per block of
     * BLOCK rounds (~1 ms) the context switches of this rank's thread (getrusage, before and after the
     * block: a phase in which a rank was switched out is longer by the other process's slice). */
    /* (a block of ~1 ms: under load a longer one is seldom clean) */
    int BLOCK = (int)(1000 / (4 * phase_us));
    if (BLOCK < 1)
        BLOCK = 1;
    long blocks = (warm + rounds + BLOCK - 1) / BLOCK;
    uint64_t *wall = calloc((size_t)(warm + rounds) * 4, sizeof *wall);
    unsigned char *order = calloc((size_t)(warm + rounds), 1);
    long *switches = calloc((size_t)blocks, sizeof *switches);
    if (wall == NULL || order == NULL || switches == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    /* A round: two V phases and two B phases in one of the six orders of VVBB, drawn at random
     * each round, the same sequence on both ranks (a fixed seed), so that no place in a round
     * (the first after a block's getrusage, the last) is either kind's more often. Recorded as
     * V1 V2 B1 B2 (each kind's in the order they ran): (V1 + V2 - B1 - B2) / 2 and
     * (V1 - V2 + B1 - B2) / 2 are then alike under no difference (symmetric, one variance). */
    static const char orders[6][4] = {{0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 0},
                                      {1, 0, 0, 1}, {1, 0, 1, 0}, {1, 1, 0, 0}};
    /* Each kind's phases go on with its own units (V's calls, as the interposer sees them, are
     * one unbroken sequence, as if the V phases ran back to back: its chain lookup follows the
     * sequence as in a run that makes only these calls; B's run the same code, sites and
     * arguments). */
    /* CALLCOST_CUT=bits (a measurement build of libcolltune that has the int colltune_cut):
     * the B phases call MPI_* too, with colltune_cut = bits (parts of the call path switched off
     * at run time), V's with 0: the cost reported is then what those parts cost, in one run. */
    const char *cut_env = getenv("CALLCOST_CUT");
    int cut_bits = cut_env != NULL ? atoi(cut_env) : 0;
    int *cut = cut_bits != 0 ? (int *)dlsym(RTLD_DEFAULT, "colltune_cut") : NULL;
    if (cut_bits != 0 && cut == NULL) {
        fprintf(stderr, "callcost: CALLCOST_CUT without a colltune_cut in the process\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    uint32_t rng = 0x9E3779B9u;
    long unit_of[2] = {0, 0}, n = warm + rounds;
    struct rusage s0, s1;
    for (long r = 0; r < n; r++) {
        if (r % BLOCK == 0)
            getrusage(RUSAGE_THREAD, &s0);
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        int o = (int)(rng % 6), seen[2] = {0, 0};
        order[r] = (unsigned char)o;
        for (int k = 0; k < 4; k++) {
            int b = orders[o][k];
            cc_via = b && cut == NULL ? 0 : mask;
            if (cut != NULL)
                *cut = b ? cut_bits : 0;
            uint64_t t0 = cc_ns(CLOCK_MONOTONIC);
            cc_phase(unit_of[b], units);
            wall[r * 4 + 2 * b + seen[b]++] = cc_ns(CLOCK_MONOTONIC) - t0;
            unit_of[b] += units;
        }
        if (r % BLOCK == BLOCK - 1 || r == n - 1) {
            getrusage(RUSAGE_THREAD, &s1);
            switches[r / BLOCK] = (s1.ru_nivcsw - s0.ru_nivcsw) + (s1.ru_nvcsw - s0.ru_nvcsw);
        }
    }
    cc_via = 0;
    if (cut != NULL)
        *cut = 0;

    char path[4096];
    snprintf(path, sizeof path, "%s.%d", out, cc_rank);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(f, "# gap_ns %g gap_chunks %ld chunk_ns %.3f evict %d mask %d units %ld calls %ld "
               "via_calls %ld self %d block %d cut %d\n",
            gap_ns, cc_gap_chunks, chunk_ns, cc_evict, mask, units, 5 * units,
            (long)via_calls * units, self, (int)BLOCK, cut_bits);
    fprintf(f, "round\torder\tV1\tV2\tB1\tB2\tswitches\n");
    for (long r = warm; r < n; r++)
        fprintf(f, "%ld\t%d\t%llu\t%llu\t%llu\t%llu\t%ld\n", r - warm, order[r],
                (unsigned long long)wall[r * 4], (unsigned long long)wall[r * 4 + 1],
                (unsigned long long)wall[r * 4 + 2], (unsigned long long)wall[r * 4 + 3],
                switches[r / BLOCK]);
    fclose(f);
    if (cc_rank == 0)
        printf("callcost done: %ld rounds, %ld units a phase, errors %ld, sink %.6g\n", rounds,
               units, cc_errors, cc_sink);
    MPI_Finalize();
    return 0;
}
#endif

/*
 * Profiling mode (COLLTUNE_PROFILE_RUN=dir): what `colltune advise` learns from one run.
 *
 * Per rank, fixed-size tables filled without allocation on the call path and written at
 * MPI_Finalize to dir/rank-N (format in docs/advise.md):
 *   - collectives by (collective, call site, communicator size, log2 bytes): calls, total and max
 *     time, bytes; on a sample of calls a timed PMPI_Barrier before the call splits the time into
 *     waiting for late ranks and the collective's own cost;
 *   - point-to-point calls (generated wrappers, native/spec/p2p.toml) by (call, site, log2 bytes);
 *   - wall time MPI_Init..MPI_Finalize and the environment (library, MPI_T cvars, binding).
 * It composes with the other modes: it times ct_dispatch's work, whoever serves the call.
 *
 * Its files, each above what it uses: profstate.c (the switches below), profclock.c (the call
 * path's clock), profcomm.c (per communicator: sampling, patterns; ct_profcomm.h), profcall.c
 * (the call path: points, memo, timing), profenv.c and topo.c (the environment), profrun.c
 * (MPI_Init's settings and MPI_Finalize's file). This header is what the rest of libcolltune
 * sees of it: the generated wrappers, init.c and modes.c.
 */
#ifndef CT_PROFRUN_H
#define CT_PROFRUN_H

#include "ct_tls.h"
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "ct_hot.h"
#include "ct_p2p_calls.h"

#define CT_PROFRUN_HIDDEN __attribute__((visibility("hidden")))
/* The switches and counters every intercepted call reads, wherever they are defined (below,
 * watch.c's ct_watch, profcomm.c's generation, requests.c's polls' sums):
 * a section of their own, which the linker collects into one output section, so that they share
 * two cache lines instead of taking one in each file's .bss (after the application's own work
 * between two calls, each line a call reads is a cache miss, and what it brings in evicts the
 * application's). Definitions only (never const). The light path's own two lines: ct_hot.h. */
#define CT_HOT_DATA __attribute__((section("ct_hot_data")))
/* The same for code: the functions a repetition of a profiled call runs (the MPI_* wrappers of
 * the collectives and point-to-point calls the applications repeat, their serving functions,
 * the call path by arguments), defined where they are (generated wrappers, profcall.c) and
 * placed together: GCC's `hot` puts a function in .text.hot (its unlikely blocks still split
 * off into .text.unlikely, which an explicit section would have stopped), and the linker
 * collects every input section .text.hot at the start of .text (GNU ld's and gold's default
 * scripts), so that the path of one call runs through neighbouring lines and one page instead
 * of four places of .text (OpenFOAM: an Allreduce's path ran at 0x12080, 0x29b60, 0x508c0 and
 * 0x50c40, each line an instruction-cache miss after the application's own work between two
 * calls). Each function starts a line: a wrapper of under 64 bytes is one line, not two. The
 * assembly stubs name the section in their .pushsection (CT_HOT_TEXT_SECTION). */
#define CT_HOT_TEXT_SECTION ".text.hot"
#define CT_HOT_TEXT __attribute__((hot, aligned(64)))
/* The library's functions a repetition calls, called through their GOT entries (GCC's noplt:
 * `call *PMPI_x@GOTPCREL(%rip)`) instead of a PLT stub, whose line is one more instruction-cache
 * miss a call (and its .got.plt entry one more data line: the GOT entry read instead shares its
 * line with the TLS offsets the path reads first). Bound at load time instead of at their
 * first call: only functions every MPI library of an ABI family has (MPI-1's), so a missing
 * symbol cannot fail a load where lazy binding would have let it pass. GCC on x86-64 only
 * (clang has no such attribute; SMPI's calls go through its own layer). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__PIC__) \
    && !defined(COLLTUNE_ABI_FAMILY_SMPI)
#define CT_NOPLT(fn) extern __typeof__(fn) fn __attribute__((noplt))
CT_NOPLT(PMPI_Allreduce);
CT_NOPLT(PMPI_Reduce);
CT_NOPLT(PMPI_Bcast);
CT_NOPLT(PMPI_Send);
CT_NOPLT(PMPI_Recv);
CT_NOPLT(PMPI_Isend);
CT_NOPLT(PMPI_Irecv);
CT_NOPLT(PMPI_Wait);
CT_NOPLT(PMPI_Waitall);
#endif

/* ---- the switches (profstate.c) ---------------------------------------------------------- */
/* Process-wide, written once at MPI_Init (profrun.c) and cleared at MPI_Finalize, read on every
 * call without atomics (the ct_active rule: MPI_Init happens before any collective). */
extern CT_PROFRUN_HIDDEN unsigned char ct_profrun_on;   /* profiling the collectives */
/* ct_p2p_on (ct_hot.h): ... and the p2p wrappers */
extern CT_PROFRUN_HIDDEN int ct_profrun_mt;             /* MPI_THREAD_MULTIPLE: atomic counters */
/* 1 where a mode other than profiling serves the collective (ct_active as the modes set it,
 * before the profiling mode turned every wrapper on): those go through ct_dispatch, the others
 * straight to the library, without ct_dispatch's decision path (its queries are the larger part
 * of a profiled call). */
extern CT_PROFRUN_HIDDEN unsigned char ct_profrun_by_modes[];
/* The same, with the bounds checked (for colltune_route_name). */
CT_PROFRUN_HIDDEN int ct_profrun_served(int coll);

/* Per thread. initial-exec: a plain %fs access on every intercepted call instead of
 * __tls_get_addr (libcolltune is preloaded or linked, so its TLS is in the static block).
 * What every profiled call reads or writes of its thread is one cache line, this struct: as
 * separate variables they were spread over four lines of the TLS block (with cold caches between
 * them), and after the application's own work between two calls each line is a cache miss
 * (OpenFOAM, callgrind's cache simulation: ~9 L1 misses a profiled call, more than its
 * instructions cost). The names below are its fields (macros), so the generated wrappers and the
 * call path read them as before. */
struct ct_chain_cache;
struct ct_chain_seen;
struct ct_memo_block;
typedef struct __attribute__((aligned(64))) ct_profrun_thread {
    /* The call site of the collective being dispatched: set first thing by the generated
     * serving function (gen_wrappers.split), which the wrapper reaches by a tail jump. */
    const void *site;
    /* Set by the Fortran wrappers around their call of the C wrapper: the application's call
     * site (the C wrapper's return address would be colltune's own ct_f_* frame). NULL
     * otherwise. */
    const void *caller;
    /* 1 while the profiling mode serves a call: a collective the serving code makes itself is
     * not profiled again. */
    int inside;
    uint32_t time_left;               /* the timing countdown (ct_profrun_impl.h) */
    uint64_t seq;                     /* the thread's intercepted calls, numbered (ditto) */
    struct ct_chain_cache *chains;    /* the chains it met (profchain.c) */
    struct ct_chain_seen *last;       /* the entry of its previous lookup, NULL: none (ditto) */
    const struct ct_chain_seen *guess;   /* the next lookup's first try: last's follower */
    struct ct_memo_block *memos;      /* its memo block (profcall.c; its point-to-point entries
                                         first: ct_p2p_memos) */
} ct_profrun_thread;
_Static_assert(sizeof(ct_profrun_thread) == 64, "one cache line");
extern CT_PROFRUN_HIDDEN _Thread_local ct_profrun_thread ct_profrun_me CT_TLS_MODEL;
#define ct_profrun_site (ct_profrun_me.site)
#define ct_profrun_caller (ct_profrun_me.caller)
#define ct_profrun_inside (ct_profrun_me.inside)

/* ---- the clock (profclock.c) ------------------------------------------------------------- */
/* Monotonic nanoseconds (CLOCK_MONOTONIC: one clock for all ranks of a node). */
CT_PROFRUN_HIDDEN uint64_t ct_profrun_ns(void);
/* The call path's clock: TSC ticks where the kernel trusts the TSC, else ns. */
CT_PROFRUN_HIDDEN uint64_t ct_profrun_ticks(void);
CT_PROFRUN_HIDDEN double ct_profrun_ns_per_tick(void);   /* the rate since MPI_Init */
CT_PROFRUN_HIDDEN void ct_profrun_clock_start(void);       /* MPI_Init */
extern CT_PROFRUN_HIDDEN uint64_t ct_profrun_ns_init;       /* ct_profrun_ns() then */

/* ---- the call path (profcall.c) ---------------------------------------------------------- */
struct ct_call;
/* An intercepted collective while profiling (the generated wrappers call it instead of
 * ct_dispatch when ct_profrun_on && !ct_profrun_inside): counted, timed, sampled, then served by
 * ct_dispatch or the library. MPI_Barrier is profcall.c's own wrapper. */
CT_PROFRUN_HIDDEN int ct_profrun_dispatch(const struct ct_call *call);
/* The rows whose serving function hands a profiled call over by its arguments (gen_wrappers.py's
 * BY_ARGS; the same signature as MPI_<Coll>): a memoised call's repetition is counted, timed and
 * served there without the 16-field ct_call (~30 instructions of a ~300-instruction path on
 * OpenFOAM's reductions). Any other call (not a repetition, or another mode serves the
 * collective) goes on to the generated ct_full_<coll> (same arguments), which builds the
 * ct_call and calls ct_profrun_dispatch; the chain found here is handed on. */
CT_PROFRUN_HIDDEN int ct_profrun_allreduce(const void *sendbuf, void *recvbuf, int count,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
CT_PROFRUN_HIDDEN int ct_profrun_reduce(const void *sendbuf, void *recvbuf, int count,
                                        MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
CT_PROFRUN_HIDDEN int ct_profrun_bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                                       MPI_Comm comm);
CT_PROFRUN_HIDDEN int ct_full_allreduce(const void *sendbuf, void *recvbuf, int count,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
CT_PROFRUN_HIDDEN int ct_full_reduce(const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
CT_PROFRUN_HIDDEN int ct_full_bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                                    MPI_Comm comm);
extern CT_PROFRUN_HIDDEN const char *const ct_p2p_names[CT_P2P_COUNT];   /* ct_p2p_wrappers.c */
/* count * size(type), 0 for a null or invalid type (the library reports that error itself). */
CT_PROFRUN_HIDDEN int64_t ct_profrun_bytes(int count, MPI_Datatype type);
/* A point-to-point call; `ticks`: its duration on the call path's clock (ct_profrun_ticks). */
CT_PROFRUN_HIDDEN void ct_profrun_p2p(ct_p2p_call call, const void *site, int64_t bytes,
                                      uint64_t ticks);
/* The generated point-to-point wrappers: counted at begin (before the library's call), timed
 * for a sample as collectives are (a point's first 64 calls, then about one in 16), the time
 * recorded at end. Two words, returned in registers (a larger record went through memory, four
 * stores and their loads on every call); the budget's clock at the wrapper's entry (`t_in`, on
 * the countdown's calls only: ct_own_entry) waits in a thread-local for end. `chain`: the
 * call's chain (ct_profchain_fast, the wrapper's CFA its anchor); `count` and `type` give the
 * bytes (count * size(type)); begin compares them with the chain's last call instead of sizing.
 * A repetition that is not timed never reaches begin (ct_profrun_p2p_again, inline). */
typedef struct ct_p2p_rec {
    void *slot;                 /* the point, NULL: its table was full */
    uint64_t t0;                /* the clock at begin when timed, else 0 */
} ct_p2p_rec;
CT_PROFRUN_HIDDEN ct_p2p_rec ct_profrun_p2p_begin(ct_p2p_call call, const void *chain, int count,
                                                  MPI_Datatype type, uint64_t t_in);
CT_PROFRUN_HIDDEN void ct_profrun_p2p_end(ct_p2p_rec rec);

/* ---- the environment (profenv.c, topo.c) ------------------------------------------------- */
/* The node's topology from /sys (NUMA nodes, device locality, isolated cores), topo.c. */
CT_PROFRUN_HIDDEN void ct_topo_write(FILE *out);
/* The executable mappings at MPI_Init, the rest written at MPI_Finalize (header, library, host,
 * binding, control variables, topology). */
CT_PROFRUN_HIDDEN void ct_profenv_read_maps(void);
CT_PROFRUN_HIDDEN void ct_profenv_write(FILE *out, int rank, int nprocs, uint64_t wall,
                                        unsigned long every, uint64_t budget_ppm);

/* ---- MPI_Init and MPI_Finalize (profrun.c) ------------------------------------------------- */
/* At MPI_Init ct_profrun_prepare fills its slots of init.c's settings agreement (one
 * PMPI_Allreduce with MPI_MAX for every mode); ct_profrun_start reads the agreed values (after
 * the modes are installed). ct_profrun_finish writes dir/rank-N. */
enum { CT_PR_SAMPLE, CT_PR_SAMPLE_NOT, CT_PR_BUDGET, CT_PR_BUDGET_NOT, CT_PROFRUN_SLOTS };
CT_PROFRUN_HIDDEN void ct_profrun_prepare(uint64_t slots[CT_PROFRUN_SLOTS]);
CT_PROFRUN_HIDDEN void ct_profrun_start(const uint64_t agreed[CT_PROFRUN_SLOTS], int rank,
                                        int nprocs);
CT_PROFRUN_HIDDEN void ct_profrun_finish(void);

#endif /* CT_PROFRUN_H */

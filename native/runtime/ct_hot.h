/*
 * The two lines of data an intercepted call reads (libcolltune.so only; defined in profstate.c).
 *
 * At OpenFOAM's call rate (a call every ~7 us of its own work, which evicts what the previous
 * call read) every line a call reads is a cache miss, and each costs the application more than
 * the instructions around it (benchmarks/advise/callcost.py). A call on the light path of
 * repeated calls (requests.c) needs its wrapper's switch, its function's countdown, the count of
 * light calls (the numbering of calls) and, a collective, the communicator it is made on and
 * how many calls it may make before its next sample (so that the communicator's own state, one
 * more line, is read only by the full path: session 21): spread
 * over the hot data section, the countdowns' array and the thread's TLS line (through a GOT
 * entry for its offset) they were five lines a collective and three a point-to-point call
 * (session 18). Here each kind of call finds all of them in one line of its own: the
 * collectives' (with every collective wrapper's byte of ct_active) and the point-to-point
 * calls' (with their switch, ct_p2p_on). The assembly stubs test the lines' first bytes by the
 * objects' names (ct_coll_line+<collective>, ct_p2p_line), so each switch is at a fixed offset.
 *
 * Written at MPI_Init and MPI_Finalize (the switches, the countdowns shut or armed) and, below
 * MPI_THREAD_MULTIPLE only, by the calls (plain counters: one thread at a time in MPI). Under
 * MPI_THREAD_MULTIPLE the countdowns stay shut, so no call reads the rest.
 */
#ifndef CT_HOT_H
#define CT_HOT_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "ct_catalog.h"
#include "ct_p2p_calls.h"

/* A shut countdown: far below 0, so that every call takes the full path (requests.c), and the
 * racing decrements of MPI_THREAD_MULTIPLE cannot bring it above 0. */
#define CT_POLL_SHUT (INT32_MIN / 2)
/* An idle poll's countdown (nothing watching: requests.c, ct_poll_passes): far above 0, so that
 * a poll passes through on its decrement alone, put back when it reaches 0. */
#define CT_POLL_IDLE (INT32_MAX / 2)

/* The collectives with a light path (gen_wrappers.py's BY_ARGS rows), their countdowns' slots. */
enum { CT_LIGHT_ALLREDUCE, CT_LIGHT_REDUCE, CT_LIGHT_BCAST, CT_LIGHT_COLLS };

struct ct_pcomm;

typedef struct __attribute__((aligned(64))) ct_hot_coll_line {
    /* 1 where some mode (or counting) wants to see calls of that collective (ct_active) */
    unsigned char active[CT_NUM_COLLECTIVES];
    /* colltune serves a collective (ct_profrun_inside's copy below MPI_THREAD_MULTIPLE): a
     * collective made under it is not the application's */
    unsigned char inside;
    /* a collective's follower may be due (some communicator's `follow`, profcall.c): the next
     * collective asks the numbered path */
    unsigned char follow;
    int32_t left[CT_LIGHT_COLLS];   /* the countdowns (requests.c's light ids CT_LIGHT_COLL + coll) */
    /* The wrappers' light calls on `comm` not yet added to its state's count of calls (nor to
     * ct_coll_light_calls): its state's line is not read on the light path, and its count is
     * brought up to date (ct_coll_line_flush) before any full path reads it. In every call's
     * number meanwhile (ct_calls_elsewhere). */
    uint32_t pending;
    /* The light calls `comm` may still take before its next sampled call (its state's
     * next_sample - calls when the numbered light path armed it), 0: none (the wrappers' light
     * path closed until the numbered one arms it again, which it does after every full path). */
    uint32_t until;
    /* the communicator of the last collective the numbered light path took, and its state
     * (profcomm.c; cleared when a communicator's state is freed) */
    MPI_Comm comm;
    struct ct_pcomm *state;
} ct_hot_coll_line;

/* The point-to-point functions' countdowns: the light functions' (Send .. Waitall) and the
 * polls' (Test .. Testsome); Waitany and Waitsome have none. */
#define CT_P2P_LIGHT_SLOTS (CT_P2P_WAITALL + 1 + CT_P2P_COUNT - CT_P2P_TEST)

typedef struct __attribute__((aligned(64))) ct_hot_p2p_line {
    unsigned char on;   /* the point-to-point wrappers profile (ct_p2p_on) */
    /* ct_watch (ct_watch.h): the Wait/Test family's and the watched functions' switch, here so
     * that MPI_Wait's and MPI_Waitall's light path read one line, as MPI_Isend's */
    unsigned char watch;
    int32_t left[CT_P2P_LIGHT_SLOTS];
    uint64_t calls;     /* light calls made, in every call's number */
} ct_hot_p2p_line;

_Static_assert(offsetof(ct_hot_coll_line, active) == 0, "the stubs test ct_coll_line+<collective>");
_Static_assert(offsetof(ct_hot_p2p_line, on) == 0, "the stubs test ct_p2p_line's first byte");
_Static_assert(offsetof(ct_hot_p2p_line, watch) == 1, "the stubs test ct_watch as ct_p2p_line+1");
_Static_assert(sizeof(ct_hot_coll_line) == 64, "one line (more collectives: move the cache out)");
_Static_assert(sizeof(ct_hot_p2p_line) == 64, "one line");
_Static_assert(CT_P2P_WAITALL + 3 == CT_P2P_TEST && CT_P2P_TESTSOME + 1 == CT_P2P_COUNT,
               "ct_p2p_slot's layout: Send .. Waitall, Waitany, Waitsome, Test .. Testsome");

extern __attribute__((visibility("hidden"))) ct_hot_coll_line ct_coll_line;
extern __attribute__((visibility("hidden"))) ct_hot_p2p_line ct_p2p_line;

#define ct_active (ct_coll_line.active)
#define ct_p2p_on (ct_p2p_line.on)
#define ct_watch (ct_p2p_line.watch)

/* Its slot in ct_p2p_line.left, -1: none. */
static inline int ct_p2p_slot(int call)
{
    return call <= CT_P2P_WAITALL ? call : call >= CT_P2P_TEST ? call - 2 : -1;
}

/* A collective's slot in ct_coll_line.left, -1: none. */
static inline int ct_coll_slot_light(int coll)
{
    return coll == CT_COLL_ALLREDUCE ? CT_LIGHT_ALLREDUCE
           : coll == CT_COLL_REDUCE  ? CT_LIGHT_REDUCE
           : coll == CT_COLL_BCAST   ? CT_LIGHT_BCAST
                                     : -1;
}

#endif /* CT_HOT_H */

/*
 * The library's own collective algorithms (`lib:<collective>:<algorithm>`), forced through MPI_T
 * (native/core/libalg.c): used by the measurement driver and by the selftest's proof.
 */
#ifndef CT_LIBALG_H
#define CT_LIBALG_H

#include <mpi.h>
#include <stddef.h>

#include "ct_mpit.h"

typedef enum ct_libalg_kind {
    CT_LIBALG_NONE = 0,
    CT_LIBALG_EACH_CALL,  /* MPI_T write before each call (MPICH; Open MPI's libnbc) */
    CT_LIBALG_OPENMPI,    /* MPI_T write, then a communicator of its own (coll/tuned) */
    CT_LIBALG_LAUNCH      /* fixed for the launch by the environment (Intel MPI I_MPI_ADJUST_*) */
} ct_libalg_kind;

typedef struct ct_libalg {
    ct_libalg_kind kind;
    ct_mpit_var alg;     /* the algorithm control variable (core/mpit.c) */
    int value;           /* the algorithm's value */
    /* MPICH only: MPIR_CVAR_DEVICE_COLLECTIVES=none (or device collectives override the
     * choice) and MPIR_CVAR_COLLECTIVE_FALLBACK=error (or an algorithm that cannot serve a
     * call is silently replaced, and the library's choice measured under the variant's name) */
    ct_mpit_var device, fallback;
    MPI_Comm comm;       /* Open MPI: a communicator created while the value was set */
} ct_libalg;

/* Resolve `lib:<collective>:<algorithm>` (algorithm by name or number). On failure returns an
 * MPI error code and writes the reason into `err`. Collective (Open MPI makes a communicator). */
int ct_libalg_open(const char *collective, const char *algorithm, MPI_Comm comm,
                   ct_libalg *alg, char *err, size_t errlen);
/* The same for the nonblocking form of `collective` (MPI_I<coll>) and its persistent form
 * (MPI_<Coll>_init), which the libraries serve with one variable: MPICH's
 * MPIR_CVAR_I<COLL>_INTRA_ALGORITHM, Open MPI's coll_libnbc_i<coll>_algorithm (neither
 * collective); Intel MPI's I_MPI_ADJUST_I<COLL>, fixed per launch (nonblocking form only),
 * checked identical on every rank of `comm` (collective there). */
int ct_libalg_open_started(const char *collective, const char *algorithm, MPI_Comm comm,
                           ct_libalg *alg, char *err, size_t errlen);
/* Make the variant's algorithm current (MPICH) before a call; restore the library's defaults. */
int ct_libalg_select(const ct_libalg *alg);
int ct_libalg_restore(const ct_libalg *alg);
void ct_libalg_close(ct_libalg *alg);

/* Algorithms that are no members of the portfolio (the library's own choice, or unusable: see
 * libalg.c); `mpich`: the MPICH family's names, else Open MPI's. */
int ct_libalg_skipped(int mpich, const char *collective, const char *name, int value);
/* The same for the algorithms of the nonblocking form (libalg.c says which and why). */
int ct_libalg_skipped_started(int mpich, const char *name, int value);
/* The member names of `collective` this library lists through MPI_T (MPI_T initialized), skipped
 * ones left out, of its nonblocking form's variable with `started`; returns how many (0: none,
 * or no algorithm variable). */
int ct_libalg_members(const char *collective, int started, char names[][64], int max);

#endif /* CT_LIBALG_H */

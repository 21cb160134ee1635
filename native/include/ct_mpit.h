/*
 * MPI_T control variables of the libraries' own collective algorithms, shared by the measurement
 * driver (bench_libalg.c: `lib:` variants) and the interposer's learning mode
 * (runtime/libalg_online.c: `lib:` members). Only MPI and MPI_T calls; nothing intercepted.
 */
#ifndef CT_MPIT_H
#define CT_MPIT_H

#include <mpi.h>
#include <stddef.h>

#define CT_MPIT_NAME 64

/* Index of the control variable `name`; 0, or -1 if this library has no such variable. */
int ct_mpit_find(const char *name, int *index);

/* The indices of n variables at once (-1 for those the library lacks): one pass over MPI_T's
 * variables where it has no lookup by name (MPI < 4), instead of one pass per name. */
void ct_mpit_find_all(const char *const *names, int n, int *indices);

/* The integer value of `wanted` (an algorithm name, or a number) for control variable `cvar`
 * (an MPI_T enumeration, or MPICH's "name - text" lines in the description). 0 or -1. */
int ct_mpit_value(int cvar, const char *wanted, int *value);

/* The (name, value) pairs of an algorithm variable, in value order, at most `max`; returns how
 * many (0 if the variable lists none). */
int ct_mpit_list(int cvar, char names[][CT_MPIT_NAME], int *values, int max);

/* A handle on a variable bound to no object; MPI error code. */
int ct_mpit_handle(int cvar, MPI_T_cvar_handle *handle);

/* "allreduce" -> "ALLREDUCE" (dst of len bytes). */
void ct_mpit_upper(char *dst, const char *src, size_t len);

/* 1 under Intel MPI, whose MPI_T writes have no effect (algorithms are fixed per launch). */
int ct_mpit_intel(void);

#endif /* CT_MPIT_H */

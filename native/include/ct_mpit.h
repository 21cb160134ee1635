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

/* ---- forcing an algorithm: the one way bench, selftest and the interposer write variables ---- */

/* An integer control variable a forced algorithm writes and then restores. */
typedef struct ct_mpit_var {
    int present;               /* 0: absent, or refused the probe (nothing is ever written) */
    int original;              /* its value when opened: the library's */
    int forced;                /* the value ct_mpit_var_force writes */
    MPI_T_cvar_handle handle;
} ct_mpit_var;

/* Open variable `index` (-1: the library lacks it) and probe a write of its own value: Open MPI
 * 4.1 lists its algorithm variables but answers every write with MPI_T_ERR_CVAR_SET_NEVER. With
 * `forced_name`, `forced` is that value of the variable (a name it does not list: not present).
 * Returns MPI_SUCCESS (present or absent) or the MPI_T error that refused the probe. */
int ct_mpit_var_open(ct_mpit_var *v, int index, const char *forced_name);
/* Write `value` / the forced value / the original back; MPI_SUCCESS where not present. */
int ct_mpit_var_set(const ct_mpit_var *v, int value);
int ct_mpit_var_force(const ct_mpit_var *v);
int ct_mpit_var_restore(const ct_mpit_var *v);
void ct_mpit_var_close(ct_mpit_var *v);

/* Open MPI honours a forced coll_tuned algorithm only with coll_tuned_use_dynamic_rules on when
 * a communicator is made: 1 if usable (already on at launch: left alone, not present; or
 * writable: present, forced 1), 0 if off and read-only (Open MPI before 5.0). */
int ct_mpit_dynamic_rules(ct_mpit_var *v);
/* Open MPI 5 serves a communicator spanning several nodes with coll/han, which ignores the forced
 * coll_tuned algorithm (docs/cluster.md): coll_han_priority, forced 0 while a forced algorithm's
 * communicator is made (not present where the library has no writable han). */
int ct_mpit_han(ct_mpit_var *v);
/* Collective over `parent`: a communicator of its group (MPI_Comm_create: none of the
 * application's attribute copy callbacks run, unlike a dup) whose coll/tuned serves `value` of
 * `alg`, made with `dynamic` and `han` forced and everything restored after. */
int ct_mpit_tuned_comm(MPI_Comm parent, const ct_mpit_var *alg, int value,
                       const ct_mpit_var *dynamic, const ct_mpit_var *han, MPI_Comm *out);

#endif /* CT_MPIT_H */

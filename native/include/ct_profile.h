/*
 * Tuning profiles: parse a profile file (docs/profile.md) and look up the variant for a call.
 * Pure C, no MPI calls: the fuzz harness links it alone (core/profile.c parses,
 * core/profile_rules.c answers). Lookup is allocation-free and O(log blocks + log ranges).
 */
#ifndef CT_PROFILE_H
#define CT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ct_profile ct_profile;

/* Parse `path`. Returns 0 and a profile, or -1 with a message "path:line: what is wrong" in
 * err (never crashes on any input; a truncated or malformed file is an error). */
int ct_profile_load(const char *path, ct_profile **profile, char *err, size_t errlen);

/* Same, from a buffer (used by the fuzz harness and by tests). `name` is used in messages. */
int ct_profile_parse(const char *text, size_t len, const char *name, ct_profile **profile,
                     char *err, size_t errlen);

void ct_profile_free(ct_profile *profile);

/* Hash of the profile's content (what the rules say, not the file bytes), compared across ranks
 * at MPI_Init so that every rank applies the same profile. */
uint64_t ct_profile_hash(const ct_profile *profile);

/* Variant index (ct_var_id) for collective `coll` on a communicator of `comm_size` processes and
 * a message of `bytes` bytes, or -1 if the profile says "use the library". Layout-free rules only
 * (`procs` blocks): the answer for a communicator whose layout is not known or not uniform. */
int ct_profile_lookup(const ct_profile *profile, int coll, int comm_size, int64_t bytes);

/* The same for a communicator spread over `nodes` nodes with `ppn` processes on each (a uniform
 * layout, nodes * ppn == comm_size; 0 0: unknown or not uniform). A layout block of exactly
 * (nodes, ppn) decides alone where the collective has one; otherwise the layout-free rules. */
int ct_profile_lookup_layout(const ct_profile *profile, int coll, int comm_size, int nodes,
                             int ppn, int64_t bytes);

/* 1 if collective `coll` (any collective if coll < 0) has layout blocks: only then does a
 * decision need the communicator's layout. */
int ct_profile_has_layouts(const ct_profile *profile, int coll);

/* The started forms (docs/profile.md, "Nonblocking and persistent forms"): a section
 * `collective <coll>#nonblocking` (`#persistent`) names the library's algorithms of that form,
 * `lib:<coll>:<alg>#nonblocking`, which the parser takes by their shape; the interposer resolves
 * them at MPI_Init with `find` (the member id of a name, or -1 where the library does not offer
 * it: those rules then leave the calls to the library). Returns how many names were not found. */
int ct_profile_resolve(ct_profile *profile, int (*find)(const char *name));

/* The i-th name of the started forms' rules (i < ct_profile_name_count), NULL past the end. */
size_t ct_profile_name_count(const ct_profile *profile);
const char *ct_profile_name(const ct_profile *profile, size_t i);

/* 1 if the profile has a section for collective `coll` in `form` (1 nonblocking, 2 persistent;
 * any collective if coll < 0). */
int ct_profile_has_form(const ct_profile *profile, int form, int coll);

/* The member id for an MPI_I<coll> (form 1) or MPI_<Coll>_init (form 2) call on a communicator
 * of `comm_size` processes and `bytes` bytes (the row's uniform size), or -1: the library.
 * Layout-free blocks only: a started call cannot agree on its communicator's layout without
 * blocking, so the parser refuses `nodes` blocks in these sections. */
int ct_profile_lookup_form(const ct_profile *profile, int form, int coll, int comm_size,
                           int64_t bytes);

/* Number of `bytes` rules in the profile (for the interposer's start-up message and tests). */
size_t ct_profile_rule_count(const ct_profile *profile);

#endif /* CT_PROFILE_H */

/*
 * Tuning profiles: parse a profile file (docs/profile.md) and look up the variant for a call.
 * Pure C, no MPI calls: the fuzz harness links it alone. Lookup is allocation-free and
 * O(log ranges).
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
 * a message of `bytes` bytes, or -1 if the profile says "use the library". */
int ct_profile_lookup(const ct_profile *profile, int coll, int comm_size, int64_t bytes);

/* Number of `bytes` rules in the profile (for the interposer's start-up message and tests). */
size_t ct_profile_rule_count(const ct_profile *profile);

#endif /* CT_PROFILE_H */

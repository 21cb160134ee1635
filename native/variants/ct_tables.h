/*
 * The counts and displacements of the mock-ups' vector calls (tables.c), kept per communicator.
 *
 * A mock-up that replaces a regular collective by its v-form passes the library p-entry arrays.
 * Filling them on every call made the mock-up's own per-call work grow as p; they depend only on
 * the communicator's size and a few scalars of the call (a count, a root, an element size), so
 * they are built once per communicator and key and reused by every later call: colltune's
 * per-call work stays constant and only the library's v-call is O(p). The arrays are read-only
 * for the caller (MPI reads them during the blocking call and keeps no reference).
 */
#ifndef CT_TABLES_H
#define CT_TABLES_H

#include "../core/ct_core.h"

/* p equal blocks of `count` elements: counts[i] = count, displs[i] = i * count (GL4, GL8, GL12,
 * GL18, GL22). MPI_ERR_COUNT, raised, when the last displacement does not fit an int. */
int ct_table_equal(MPI_Comm comm, int p, int count, const int **counts, const int **displs);

/* ct_chunk_split of `count` elements of `elem` bytes over p ranks (GL7, GL16). */
int ct_table_chunks(MPI_Comm comm, int p, int count, int64_t elem, const int **counts,
                    const int **displs);

/* `count` elements from `root` only, every displacement 0 (GL9). */
int ct_table_root_only(MPI_Comm comm, int p, int root, int count, const int **counts,
                       const int **displs);

#endif /* CT_TABLES_H */

/*
 * Helpers of the MPI-4 large-count wrappers (MPI_Allreduce_c, ...): a _c call whose counts fit
 * an int is served exactly like the int binding; otherwise it goes to PMPI_*_c unchanged.
 */
#include <limits.h>

#include "ct_runtime.h"

#if MPI_VERSION >= 4

static int ct_bytes(MPI_Count count, MPI_Datatype type, MPI_Count *bytes)
{
    MPI_Count size;
    if (count < 0 || PMPI_Type_size_c(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return !__builtin_mul_overflow(count, size, bytes);
}

int ct_fits(MPI_Count count, MPI_Datatype type)
{
    MPI_Count bytes;
    return ct_bytes(count, type, &bytes) && bytes > 0 && bytes <= INT_MAX;
}

int ct_narrow(MPI_Count count)
{
    return count >= INT_MIN && count <= INT_MAX ? (int)count : 0;
}

colltune_reason ct_large_comm(MPI_Comm comm, int *rank)
{
    int inter;
    *rank = -1;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return COLLTUNE_NA_ERROR;
    if (inter)
        return COLLTUNE_NA_INTERCOMM;
    return PMPI_Comm_rank(comm, rank) == MPI_SUCCESS ? COLLTUNE_APPLICABLE : COLLTUNE_NA_ERROR;
}

int ct_fits_counts(const MPI_Count *counts, int n, MPI_Datatype type, int *small)
{
    MPI_Count sum = 0, bytes;
    for (int i = 0; i < n; i++)
        if (counts[i] < 0 || __builtin_add_overflow(sum, counts[i], &sum))
            return 0;
    if (!ct_bytes(sum, type, &bytes) || bytes <= 0 || bytes > INT_MAX)
        return 0;
    /* Each count <= sum <= bytes <= INT_MAX (size >= 1 since bytes > 0). */
    for (int i = 0; i < n; i++)
        small[i] = (int)counts[i];
    return 1;
}

#endif /* MPI_VERSION >= 4 */

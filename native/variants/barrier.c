/*
 * MPI_Barrier mock-up (colltune CT1).
 */
#include "ct_variants.h"

/* CT1: an MPI_Allreduce of one byte. No rank can hold the result before every rank has
 * contributed, so none leaves before all have entered: the barrier's semantics. A zero-count
 * reduction would not do: the standard lets it return at once, and Open MPI's does. */
int colltune_barrier_as_allreduce(MPI_Comm comm)
{
    unsigned char token = 0;
    return PMPI_Allreduce(MPI_IN_PLACE, &token, 1, MPI_BYTE, MPI_BOR, comm);
}

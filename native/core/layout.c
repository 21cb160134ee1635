/*
 * The node layout of a communicator (include/ct_layout.h).
 */
#include "ct_layout.h"

#include <stddef.h>

static MPI_Comm ct_world_twin = MPI_COMM_NULL;   /* written by MPI_Init and MPI_Finalize alone */

/* The duplicate returns its errors instead of taking MPI_COMM_WORLD's handler as it was at
 * MPI_Init (fatal by default): every caller checks the code and plays safe (the agreement turns
 * libcolltune off, a layout that fails leaves the call to the library), so that a failure of
 * colltune's own reduction surfaces, if at all, in the application's next call on its own
 * communicator and under the handler the application chose. */
int ct_world_twin_open(MPI_Comm *twin)
{
    int rc = MPI_SUCCESS;
    if (ct_world_twin == MPI_COMM_NULL
        && (rc = PMPI_Comm_dup(MPI_COMM_WORLD, &ct_world_twin)) == MPI_SUCCESS
        && (rc = PMPI_Comm_set_errhandler(ct_world_twin, MPI_ERRORS_RETURN)) != MPI_SUCCESS)
        PMPI_Comm_free(&ct_world_twin);
    if (rc != MPI_SUCCESS)
        ct_world_twin = MPI_COMM_NULL;
    *twin = ct_world_twin;
    return rc;
}

void ct_world_twin_close(void)
{
    if (ct_world_twin != MPI_COMM_NULL)
        PMPI_Comm_free(&ct_world_twin);
    ct_world_twin = MPI_COMM_NULL;
}

static uint32_t ct_sat32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int ct_comm_layout(MPI_Comm comm, uint64_t *carry, ct_layout *out)
{
    MPI_Comm local;
    int local_rank, local_size;
    int rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Comm_rank(local, &local_rank);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_size(local, &local_size);
    PMPI_Comm_free(&local);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Nodes: one count per node's first process. Processes per node: the largest and, by the
     * maximum of the complements, the smallest group in one reduction. */
    uint64_t sums[2] = {carry != NULL ? *carry : 0, local_rank == 0};
    uint64_t most[2] = {(uint64_t)local_size, ~(uint64_t)local_size};
    /* On a private duplicate: MPICH switches a communicator's node-level algorithms (and the
     * bits of its float sums) after a count of the collective calls it saw, so the
     * application's communicator must see only the application's calls (runtime/init.c).
     * MPI_COMM_WORLD's is the one MPI_Init made. */
    int kept = comm == MPI_COMM_WORLD && ct_world_twin != MPI_COMM_NULL;
    MPI_Comm own = ct_world_twin;
    if (!kept && (rc = PMPI_Comm_dup(comm, &own)) != MPI_SUCCESS)
        return rc;
    rc = PMPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_UINT64_T, MPI_SUM, own);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_UINT64_T, MPI_MAX, own);
    int freed = kept ? MPI_SUCCESS : PMPI_Comm_free(&own);
    if (rc == MPI_SUCCESS)
        rc = freed;
    if (rc != MPI_SUCCESS)
        return rc;
    if (carry != NULL)
        *carry = sums[0];
    out->nodes = ct_sat32(sums[1]);
    out->ppn_max = ct_sat32(most[0]);
    out->ppn_min = ct_sat32(~most[1]);
    return MPI_SUCCESS;
}

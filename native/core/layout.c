/*
 * The node layout of a communicator (include/ct_layout.h).
 */
#include "ct_layout.h"

#include <stddef.h>

static MPI_Comm ct_world_twin = MPI_COMM_NULL;   /* written by MPI_Init and MPI_Finalize alone */

/* Open MPI makes the twin with MPI_Comm_create_group over MPI_COMM_WORLD's group, not
 * MPI_Comm_dup: Open MPI (2.x to 5.x) agrees on a duplicate's context id by a nonblocking
 * allreduce of the parent's libnbc module, which registers libnbc's progress function until
 * MPI_COMM_WORLD is freed at MPI_Finalize, so every opal_progress of the run (each poll of each
 * blocking call's wait) also called ompi_coll_libnbc_progress: +21 instructions a poll, 135,351
 * polls in 2,000 MPI_Allreduce of a program that never made a communicator or a nonblocking
 * collective itself (benchmarks/advise/README.md, "seventeenth round: what the preload alone
 * costs"). MPI_Comm_create_group agrees by point-to-point messages in a tag space of its own
 * (ompi_comm_allreduce_group_nb) and leaves libnbc as the application left it. At MPI_Init the
 * two make the same communicator for colltune's use: MPI_COMM_WORLD's group, no topology, no
 * attribute yet. The MPICH family keeps MPI_Comm_dup: measured on Open MPI only. */
static int ct_world_twin_make(MPI_Comm *twin)
{
#if defined(COLLTUNE_ABI_FAMILY_OPENMPI)
    MPI_Group world;
    int rc = PMPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Comm_create_group(MPI_COMM_WORLD, world, 0, twin);
    PMPI_Group_free(&world);
    return rc;
#else
    return PMPI_Comm_dup(MPI_COMM_WORLD, twin);
#endif
}

/* The duplicate returns its errors instead of taking MPI_COMM_WORLD's handler as it was at
 * MPI_Init (fatal by default): every caller checks the code and plays safe (the agreement turns
 * libcolltune off, a layout that fails leaves the call to the library), so that a failure of
 * colltune's own reduction surfaces, if at all, in the application's next call on its own
 * communicator and under the handler the application chose. */
int ct_world_twin_open(MPI_Comm *twin)
{
    int rc = MPI_SUCCESS;
    if (ct_world_twin == MPI_COMM_NULL
        && (rc = ct_world_twin_make(&ct_world_twin)) == MPI_SUCCESS
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

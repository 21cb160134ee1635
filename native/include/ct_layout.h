/*
 * The node layout of a communicator: how many nodes its processes span and how many of them
 * share each node, as the library's MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups them. One
 * computation for the learning mode's cells (runtime/learn.c), the profile mode's per-layout
 * rules (runtime/commlayout.c) and the measurement driver's `tuned` (bench/). MPI calls only,
 * through PMPI: nothing intercepted.
 */
#ifndef CT_LAYOUT_H
#define CT_LAYOUT_H

#include <mpi.h>
#include <stdint.h>

typedef struct ct_layout {
    uint32_t nodes;     /* shared-memory groups of the communicator's processes */
    uint32_t ppn_max;   /* the most of its processes on one node */
    uint32_t ppn_min;   /* the fewest */
} ct_layout;

/* Collective over the intra-communicator `comm`: every rank of it must call this at the same
 * point of its sequence of collectives on `comm` (one split and two PMPI_Allreduce). `carry`, if
 * not NULL, is summed over the ranks in the same reduction (the learning mode's communicator id
 * travels there instead of in a third collective). Returns an MPI error code. */
int ct_comm_layout(MPI_Comm comm, uint64_t *carry, ct_layout *out);

/* colltune's private duplicate of MPI_COMM_WORLD (collective over MPI_COMM_WORLD; on Open MPI made
 * by MPI_Comm_create_group, which leaves libnbc's progress unregistered: layout.c), made once by
 * MPI_Init for the settings' agreement and kept until MPI_Finalize, so that MPI_COMM_WORLD's
 * layout reductions run on it instead of on a duplicate of their own: one communicator agreed
 * on, not two (SimGrid's MPICH family sets up each new communicator with a ring of P^2 messages,
 * benchmarks/scale/README.md). Every collective on it is colltune's, made by every rank at the
 * same point of MPI_COMM_WORLD's sequence, so nothing of the application crosses it. The
 * measurement driver keeps none: ct_comm_layout then duplicates MPI_COMM_WORLD like any other. */
int ct_world_twin_open(MPI_Comm *twin);
void ct_world_twin_close(void);

/* Whether every node holds the same number of the communicator's processes: only then is the
 * layout "nodes x ppn" (docs/profile.md, "Layouts"). */
static inline int ct_layout_uniform(const ct_layout *layout)
{
    return layout->nodes > 0 && layout->ppn_max == layout->ppn_min;
}

#endif /* CT_LAYOUT_H */

/*
 * MPI_Scatter mock-ups (seed 000, GL21-GL22). The root's sendbuf/sendcount/sendtype are
 * significant at the root only; non-roots describe one block with recvcount/recvtype.
 */
#include "../core/ct_core.h"
#include "ct_variants.h"

#include <string.h>

/* GL21: broadcast the whole send buffer (p blocks), keep the own block. */
int colltune_scatter_as_bcast(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    if (rank == root) {
        if ((err = ct_type_size(sendtype, &elem)) != MPI_SUCCESS) return err;
        if ((err = ct_to_int(comm, (int64_t)p * sendcount, &total)) != MPI_SUCCESS) return err;
        /* MPI_Bcast only reads the root's buffer. */
        err = PMPI_Bcast((void *)sendbuf, total, sendtype, root, comm);
        if (err == MPI_SUCCESS && recvbuf != MPI_IN_PLACE)
            memcpy(recvbuf, ct_coffset(sendbuf, elem * sendcount * root),
                   (size_t)(elem * sendcount));
        return err;
    }
    if ((err = ct_type_size(recvtype, &elem)) != MPI_SUCCESS) return err;
    if ((err = ct_to_int(comm, (int64_t)p * recvcount, &total)) != MPI_SUCCESS) return err;
    int64_t block = elem * recvcount;
    void *all;
    if ((err = ct_scratch(comm, (size_t)(p * block), &all)) != MPI_SUCCESS) return err;
    err = PMPI_Bcast(all, total, recvtype, root, comm);
    if (err == MPI_SUCCESS) memcpy(recvbuf, ct_offset(all, rank * block), (size_t)block);
    return err;
}

/* GL22: MPI_Scatterv with equal counts (arrays on the root only). */
int colltune_scatter_as_scatterv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int *counts = NULL, *displs = NULL;
    if (rank == root) {
        if ((int64_t)(p - 1) * sendcount > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
        err = ct_scratch(comm, 2 * (size_t)p * sizeof(int), (void **)&counts);
        if (err != MPI_SUCCESS) return err;
        displs = counts + p;
        for (int i = 0; i < p; i++) {
            counts[i] = sendcount;
            displs[i] = i * sendcount;
        }
    }
    return PMPI_Scatterv(sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
}

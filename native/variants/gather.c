/*
 * MPI_Gather mock-ups (seed 000, GL11-GL13).
 *
 * The root's recvcount/recvtype are significant at the root only; non-roots describe their
 * block with sendcount/sendtype (same type signature by the standard).
 */
#include "../core/ct_core.h"
#include "ct_variants.h"

#include <string.h>

/* GL11: MPI_Allgather in place on every rank (MPI_IN_PLACE of Allgather must be all or none,
 * and the root's choice is unknown elsewhere): the root into recvbuf, the others into p*n bytes
 * of scratch that they then drop. */
int colltune_gather_as_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int64_t elem;
    if (rank == root) {
        if ((err = ct_type_size(recvtype, &elem)) != MPI_SUCCESS) return err;
        int64_t block = elem * recvcount;
        if (sendbuf != MPI_IN_PLACE)
            memcpy(ct_offset(recvbuf, root * block), sendbuf, (size_t)block);
        return PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, recvcount, recvtype,
                              comm);
    }
    if ((err = ct_type_size(sendtype, &elem)) != MPI_SUCCESS) return err;
    int64_t block = elem * sendcount;
    void *all;
    if ((err = ct_scratch(comm, (size_t)(p * block), &all)) != MPI_SUCCESS) return err;
    memcpy(ct_offset(all, rank * block), sendbuf, (size_t)block);
    return PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, sendcount, sendtype, comm);
}

/* GL12: MPI_Gatherv with equal counts (arrays on the root only). */
int colltune_gather_as_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm)
{
    int p, rank;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int *counts = NULL, *displs = NULL;
    if (rank == root) {
        if ((int64_t)(p - 1) * recvcount > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
        err = ct_scratch(comm, 2 * (size_t)p * sizeof(int), (void **)&counts);
        if (err != MPI_SUCCESS) return err;
        displs = counts + p;
        for (int i = 0; i < p; i++) {
            counts[i] = recvcount;
            displs[i] = i * recvcount;
        }
    }
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root,
                        comm);
}

/* GL13: every rank places its block into p zeroed blocks; MPI_Reduce with MPI_BOR over the
 * bytes assembles them at the root, which reduces in its receive buffer. */
int colltune_gather_as_reduce(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm)
{
    int p, rank, total;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err != MPI_SUCCESS) return err;
    int64_t elem;
    err = rank == root ? ct_type_size(recvtype, &elem) : ct_type_size(sendtype, &elem);
    if (err != MPI_SUCCESS) return err;
    int64_t block = elem * (rank == root ? recvcount : sendcount);
    if ((err = ct_to_int(comm, p * block, &total)) != MPI_SUCCESS) return err;
    if (rank == root) {
        void *own = ct_offset(recvbuf, rank * block);
        if (sendbuf != MPI_IN_PLACE) memcpy(own, sendbuf, (size_t)block);
        memset(recvbuf, 0, (size_t)(rank * block));
        memset(ct_offset(own, block), 0, (size_t)((p - rank - 1) * block));
        return PMPI_Reduce(MPI_IN_PLACE, recvbuf, total, MPI_BYTE, MPI_BOR, root, comm);
    }
    void *all;
    if ((err = ct_scratch(comm, (size_t)(p * block), &all)) != MPI_SUCCESS) return err;
    memset(all, 0, (size_t)(p * block));
    memcpy(ct_offset(all, rank * block), sendbuf, (size_t)block);
    return PMPI_Reduce(all, NULL, total, MPI_BYTE, MPI_BOR, root, comm);
}

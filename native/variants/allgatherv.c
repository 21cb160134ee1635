/*
 * MPI_Allgatherv mock-ups (colltune CT2, CT3).
 */
#include "../core/ct_arena.h"
#include "ct_variants.h"

#include <string.h>

/* CT2: MPI_Gatherv to rank 0, then MPI_Bcast of the blocks. The broadcast uses the blocks alone
 * (an indexed datatype of the caller's counts and displacements) so that the receive buffer
 * between them keeps its contents. Each rank builds it from its own recvcounts and recvtype:
 * their type signatures match, as the standard requires them to. With MPI_IN_PLACE the own
 * block already sits at its place: rank 0 gathers in place, the others send from there. */
int colltune_allgatherv_as_gatherv_bcast(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, const int *recvcounts, const int *displs,
                                         MPI_Datatype recvtype, MPI_Comm comm)
{
    int p, rank;
    MPI_Aint lb, extent;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = PMPI_Type_get_extent(recvtype, &lb, &extent);
    if (err != MPI_SUCCESS) return err;
    if (sendbuf == MPI_IN_PLACE && rank != 0) {
        sendbuf = ct_offset(recvbuf, (int64_t)displs[rank] * extent);
        sendcount = recvcounts[rank];
        sendtype = recvtype;
    }
    err = PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, 0, comm);
    if (err != MPI_SUCCESS) return err;
    MPI_Datatype blocks;
    err = PMPI_Type_indexed(p, recvcounts, displs, recvtype, &blocks);
    if (err != MPI_SUCCESS) return err;
    err = PMPI_Type_commit(&blocks);
    if (err == MPI_SUCCESS) err = PMPI_Bcast(recvbuf, 1, blocks, 0, comm);
    int freed = PMPI_Type_free(&blocks);
    return err != MPI_SUCCESS ? err : freed;
}

/* CT3: equal blocks (the rule checks that every block holds n bytes): MPI_Allgather of n bytes
 * as MPI_BYTE on every rank (datatypes may differ by rank; bytes do not). A contiguous receive
 * datatype with the displacements of p adjacent blocks gathers in recvbuf itself, else the
 * blocks gather in scratch and each is unpacked to its displacement (which of the two is a
 * local matter: the collective is the same). The own block goes to its place first, from
 * sendbuf or, with MPI_IN_PLACE, from its place in recvbuf. */
int colltune_allgatherv_as_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, const int *recvcounts, const int *displs,
                                     MPI_Datatype recvtype, MPI_Comm comm)
{
    int p, rank, contiguous;
    MPI_Aint lb, extent;
    int64_t size;
    int err = ct_comm_size_rank(comm, &p, &rank);
    if (err == MPI_SUCCESS) err = PMPI_Type_get_extent(recvtype, &lb, &extent);
    if (err == MPI_SUCCESS) err = ct_type_size(recvtype, &size);
    if (err == MPI_SUCCESS) err = ct_type_contiguous(recvtype, &contiguous);
    if (err != MPI_SUCCESS) return err;
    int count = recvcounts[0];
    int64_t n = (int64_t)count * size;
    int adjacent = contiguous;
    for (int i = 0; i < p; i++) adjacent &= displs[i] == i * count;
    void *target = recvbuf;
    if (!adjacent && (err = ct_scratch(comm, (size_t)(p * n), &target)) != MPI_SUCCESS) return err;
    void *own = ct_offset(recvbuf, (int64_t)displs[rank] * extent);
    if (sendbuf != MPI_IN_PLACE)
        err = ct_pack(sendbuf, sendcount, sendtype, ct_offset(target, rank * n), n, comm);
    else if (!adjacent)
        err = ct_pack(own, count, recvtype, ct_offset(target, rank * n), n, comm);
    if (err == MPI_SUCCESS)
        err = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, target, (int)n, MPI_BYTE, comm);
    for (int i = 0; i < p && err == MPI_SUCCESS && !adjacent; i++)
        err = ct_unpack(ct_offset(target, i * n), n, ct_offset(recvbuf, (int64_t)displs[i] * extent),
                        count, recvtype, comm);
    return err;
}

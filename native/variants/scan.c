/*
 * MPI_Scan mock-up (PGMPITuneLib, GL20).
 */
#include "../core/ct_arena.h"
#include "ct_variants.h"

#include <string.h>

/* GL20: MPI_Exscan, then combine the prefix with the own input by MPI_Reduce_local. The result
 * must be prefix op own: MPI_Reduce_local(in, inout) computes inout = in op inout, so a
 * commutative op can fold the prefix into recvbuf from the input directly, a non-commutative
 * op needs the prefix as `in` and the own input as `inout` (n bytes of scratch). Rank 0's Exscan
 * result is undefined: its result is its input. */
int colltune_scan_as_exscan_reducelocal(const void *sendbuf, void *recvbuf, int count,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int p, rank, commutative;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err == MPI_SUCCESS) err = PMPI_Op_commutative(op, &commutative);
    if (err != MPI_SUCCESS) return err;
    size_t bytes = (size_t)(elem * count);
    if (sendbuf != MPI_IN_PLACE && commutative) {
        err = PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
        if (err != MPI_SUCCESS) return err;
        if (rank == 0) {
            memcpy(recvbuf, sendbuf, bytes);
            return MPI_SUCCESS;
        }
        return PMPI_Reduce_local(sendbuf, recvbuf, count, datatype, op);
    }
    void *saved;
    if ((err = ct_scratch(comm, bytes, &saved)) != MPI_SUCCESS) return err;
    if (sendbuf == MPI_IN_PLACE) {
        memcpy(saved, recvbuf, bytes); /* own input */
        err = PMPI_Exscan(MPI_IN_PLACE, recvbuf, count, datatype, op, comm);
        if (err != MPI_SUCCESS) return err;
        if (rank == 0) {
            memcpy(recvbuf, saved, bytes);
            return MPI_SUCCESS;
        }
        if (commutative) return PMPI_Reduce_local(saved, recvbuf, count, datatype, op);
        err = PMPI_Reduce_local(recvbuf, saved, count, datatype, op);
        if (err == MPI_SUCCESS) memcpy(recvbuf, saved, bytes);
        return err;
    }
    /* Non-commutative, not in place: prefix into scratch, own input into recvbuf. */
    err = PMPI_Exscan(sendbuf, saved, count, datatype, op, comm);
    if (err != MPI_SUCCESS) return err;
    memcpy(recvbuf, sendbuf, bytes);
    if (rank == 0) return MPI_SUCCESS;
    return PMPI_Reduce_local(saved, recvbuf, count, datatype, op);
}

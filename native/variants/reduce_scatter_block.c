/*
 * MPI_Reduce_scatter_block mock-ups (PGMPITuneLib, GL17-GL19). The input is p blocks of recvcount
 * elements; with MPI_IN_PLACE it is in recvbuf and the result goes to recvbuf's first block, the
 * rest of recvbuf staying as it was (as the libraries do, and programs such as mpi4py's tests
 * rely on it).
 */
#include "../core/ct_arena.h"
#include "ct_tables.h"
#include "ct_variants.h"

#include <string.h>

/* GL17: MPI_Reduce of the whole vector to rank 0, MPI_Scatter of its blocks. With MPI_IN_PLACE
 * the input is recvbuf, and only its first block may change: rank 0 reduces into scratch too. */
int colltune_reducescatterblock_as_reduce_scatter(const void *sendbuf, void *recvbuf,
                                                  int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                  MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, (int64_t)p * recvcount, &total);
    if (err != MPI_SUCCESS) return err;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (rank != 0) {
        err = PMPI_Reduce(input, NULL, total, datatype, op, 0, comm);
        if (err != MPI_SUCCESS) return err;
        return PMPI_Scatter(NULL, recvcount, datatype, recvbuf, recvcount, datatype, 0, comm);
    }
    void *vector;
    if ((err = ct_scratch(comm, (size_t)(elem * total), &vector)) != MPI_SUCCESS) return err;
    err = PMPI_Reduce(input, vector, total, datatype, op, 0, comm);
    if (err != MPI_SUCCESS) return err;
    return PMPI_Scatter(vector, recvcount, datatype, recvbuf, recvcount, datatype, 0, comm);
}

/* GL18: MPI_Reduce_scatter with equal counts. In place, the library's MPI_Reduce_scatter may use
 * the rest of recvbuf as temporary space (MPICH for large messages, Open MPI for non-commutative
 * ops): reduce into scratch instead and copy the own block (contiguous datatypes only). */
int colltune_reducescatterblock_as_reducescatter(const void *sendbuf, void *recvbuf,
                                                 int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                 MPI_Comm comm)
{
    int p, err;
    int64_t elem;
    if ((err = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS) return err;
    if ((err = ct_type_size(datatype, &elem)) != MPI_SUCCESS) return err;
    int in_place = sendbuf == MPI_IN_PLACE;
    int64_t block_bytes = elem * recvcount;
    const int *counts, *displs;
    if ((err = ct_table_equal(comm, p, recvcount, &counts, &displs)) != MPI_SUCCESS) return err;
    if (!in_place) return PMPI_Reduce_scatter(sendbuf, recvbuf, counts, datatype, op, comm);
    void *block;
    if ((err = ct_scratch(comm, (size_t)block_bytes, &block)) != MPI_SUCCESS) return err;
    err = PMPI_Reduce_scatter(recvbuf, block, counts, datatype, op, comm);
    if (err == MPI_SUCCESS) memcpy(recvbuf, block, (size_t)block_bytes);
    return err;
}

/* GL19: MPI_Allreduce of the whole vector into scratch, keep the own block. With MPI_IN_PLACE
 * the input is recvbuf, of which only the first block may change. */
int colltune_reducescatterblock_as_allreduce(const void *sendbuf, void *recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int p, rank, total;
    int64_t elem;
    int err = ct_comm_shape(comm, datatype, &p, &rank, &elem);
    if (err == MPI_SUCCESS) err = ct_to_int(comm, (int64_t)p * recvcount, &total);
    if (err != MPI_SUCCESS) return err;
    int64_t block_bytes = elem * recvcount;
    void *vector;
    if ((err = ct_scratch(comm, (size_t)(elem * total), &vector)) != MPI_SUCCESS) return err;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    err = PMPI_Allreduce(input, vector, total, datatype, op, comm);
    if (err == MPI_SUCCESS)
        memcpy(recvbuf, ct_offset(vector, rank * block_bytes), (size_t)block_bytes);
    return err;
}

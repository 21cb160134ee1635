/*
 * Erroneous calls on a communicator with MPI_ERRORS_RETURN: the error class must reach the
 * caller, whoever served the call (library or variant). Rank 0 prints one line per case:
 *   "error CASE class N"   (N = the MPI error class returned, 0 = MPI_SUCCESS)
 * A test compares these lines with and without the interposer.
 *
 *   ct_errors [CASE ...]     (default: every case)
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static MPI_Comm comm;
static int size, buf[64], out[64 * 16];

static const char *const names[] = {
    "bcast_root_out_of_range", "bcast_negative_count", "allreduce_negative_count",
    "allreduce_null_op", "reduce_root_out_of_range", "allgather_null_type", "ok_allreduce",
};
#define NCASES ((int)(sizeof names / sizeof names[0]))

static int run(int c)
{
    switch (c) {
    case 0: return MPI_Bcast(buf, 4, MPI_INT, size, comm);
    case 1: return MPI_Bcast(buf, -1, MPI_INT, 0, comm);
    case 2: return MPI_Allreduce(buf, out, -1, MPI_INT, MPI_SUM, comm);
    case 3: return MPI_Allreduce(buf, out, 4, MPI_INT, MPI_OP_NULL, comm);
    case 4: return MPI_Reduce(buf, out, 4, MPI_INT, MPI_SUM, -5, comm);
    case 5: return MPI_Allgather(buf, 4, MPI_DATATYPE_NULL, out, 4, MPI_DATATYPE_NULL, comm);
    default: return MPI_Allreduce(buf, out, 4, MPI_INT, MPI_SUM, comm);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int c = 0; c < NCASES; c++) {
        int wanted = argc == 1;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], names[c]) == 0;
        if (!wanted)
            continue;
        int rc = run(c), cls = rc;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (rank == 0)
            printf("error %s class %d\n", names[c], cls);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}

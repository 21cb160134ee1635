/* MPI_Allgatherv with one type signature and two layouts: the vector(2, 1, 2, MPI_INT) on even
 * ranks, twice as many MPI_INT on odd ranks (what the selftest's "mixed" datatype passes), equal
 * blocks of N elements. Legal MPI (the type signatures match block by block); MPICH 5.0.2 fails
 * it on 3 ranks from some N on ("Message truncated" in MPIR_Allgatherv_intra_ring, whose
 * pipeline chunk is counted in each rank's own extent), and passes it on 2 and 4 ranks.
 * docs/variants.md, "Library bugs met on the way"; native/selftest/selftest.c st_mixed_swept.
 *
 *   .mpi/mpich/bin/mpicc -o /tmp/agv benchmarks/proof/allgatherv_layouts.c
 *   for n in 1000 4099; do .mpi/mpich/bin/mpiexec -n 3 /tmp/agv $n; done
 *
 * Prints one line per rank: ok, or the error the call returned. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, rank, n = argc > 1 ? atoi(argv[1]) : 4099;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype vector;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
    MPI_Type_commit(&vector);
    int odd = rank % 2;
    MPI_Datatype type = odd ? MPI_INT : vector;
    int per = odd ? 2 : 1;          /* this rank's elements of `type` per case element */
    size_t extent = odd ? 4 : 12;   /* bytes */
    int *counts = malloc(p * sizeof *counts), *displs = malloc(p * sizeof *displs);
    for (int i = 0; i < p; i++) counts[i] = per * n, displs[i] = i * per * n;
    char *send = calloc((size_t)per * n, extent), *recv = calloc((size_t)p * per * n, extent);
    int err = MPI_Allgatherv(send, per * n, type, recv, counts, displs, type, MPI_COMM_WORLD);
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (err != MPI_SUCCESS) MPI_Error_string(err, text, &len);
    printf("rank %d of %d, %d elements: %s%.*s\n", rank, p, n, err == MPI_SUCCESS ? "ok" : "error: ",
           len > 120 ? 120 : len, text);
    MPI_Type_free(&vector);
    free(send), free(recv), free(counts), free(displs);
    MPI_Finalize();
    return 0;
}

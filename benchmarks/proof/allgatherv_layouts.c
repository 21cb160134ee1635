/* MPI_Allgatherv with one type signature and two layouts: the vector(2, 1, 2, MPI_INT) on even
 * ranks, twice as many MPI_INT on odd ranks (what the selftest's "mixed" datatype passes), equal
 * blocks of N elements. Legal MPI (the type signatures match block by block); MPICH 5.0.2 fails
 * it on 3 ranks from some N on ("Message truncated" in MPIR_Allgatherv_intra_ring, whose
 * pipeline chunk is counted in each rank's own extent), and passes it on 2 and 4 ranks.
 * docs/variants.md, "Library bugs met on the way"; native/selftest/selftest.c st_mixed_swept.
 *
 * With a second argument `root`, only rank 0's block holds N elements and the call is in place
 * (what bcast_as_allgatherv, GL9, passes for a Bcast whose layouts differ between ranks).
 *
 *   .mpi/mpich/bin/mpicc -o /tmp/agv benchmarks/proof/allgatherv_layouts.c
 *   for n in 1000 4099; do .mpi/mpich/bin/mpiexec -n 3 /tmp/agv $n; done
 *   .mpi/mpich/bin/mpiexec -n 3 /tmp/agv 10240 root
 *
 * Prints one line per rank: ok, or the error the call returned.
 *
 * Where it fails (MPICH 5.0.2, 2026-11-29): MPICH picks its ring for MPI_Allgatherv from
 * sum(recvcounts) x type size = T bytes on, T >= 524288 on a power-of-two communicator and T >=
 * 81920 on any other, and the ring cuts a block whose local count x extent exceeds 32768 bytes in
 * chunks of 32768 / extent local elements. Equal blocks: 2 ranks 32767 ok / 32768 fails, 3 ranks
 * 3413 / 3414, 4 ranks 16383 / 16384 (T = 524280 / 524288, 81912 / 81936, 524256 / 524288).
 * Root only: 3 ranks 10239 / 10240 (T = 81912 / 81920), 2 ranks 65535 / 65536. */
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
    int odd = rank % 2, root_only = argc > 2 && argv[2][0] == 'r';
    MPI_Datatype type = odd ? MPI_INT : vector;
    int per = odd ? 2 : 1;          /* this rank's elements of `type` per case element */
    size_t extent = odd ? 4 : 12;   /* bytes */
    int *counts = malloc(p * sizeof *counts), *displs = malloc(p * sizeof *displs);
    for (int i = 0; i < p; i++)
        counts[i] = root_only && i > 0 ? 0 : per * n, displs[i] = root_only ? 0 : i * per * n;
    char *send = calloc((size_t)per * n, extent), *recv = calloc((size_t)p * per * n, extent);
    int err = root_only
        ? MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, type,
                         MPI_COMM_WORLD)
        : MPI_Allgatherv(send, per * n, type, recv, counts, displs, type, MPI_COMM_WORLD);
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

/*
 * One collective in a tight loop, for the per-call cost of its wrapper (benchmarks/learning_runtime
 * rows.py runs it under callgrind, collecting only inside MPI_<Coll>): one int (or one int per
 * rank for the gather/scatter/all-to-all forms) on MPI_COMM_WORLD, root 0, MPI_SUM. The forms of
 * issue 33 too: `i<coll>` is MPI_I<Coll> + MPI_Wait per call, `<coll>_init` one MPI_<Coll>_init
 * before the loop and MPI_Start + MPI_Wait per call (MPI_Request_free after it), `neighbor_<coll>`
 * (and `ineighbor_<coll>`) on a periodic ring of the ranks (MPI_Cart_create, 2 neighbours).
 *
 *   collective_loop COLLECTIVE CALLS [fresh]
 *
 * `fresh`: without the blocking MPI_Barrier on each communicator before the loop, so that the
 * started calls run on communicators that have no learning state (learn.c).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RANKS = 64 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || (argc > 3 && strcmp(argv[3], "fresh") != 0) || size > MAX_RANKS) {
        fprintf(stderr, "usage: collective_loop COLLECTIVE CALLS [fresh] (at most %d ranks)\n", MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *coll = argv[1];
    long calls = atol(argv[2]);
    static int in[MAX_RANKS], out[MAX_RANKS], counts[MAX_RANKS], displs[MAX_RANKS],
        bytes[MAX_RANKS], bdispls[MAX_RANKS];
    static MPI_Datatype types[MAX_RANKS];
    for (int r = 0; r < size; r++) {
        in[r] = r + 1;
        counts[r] = 1;
        displs[r] = r;
        bytes[r] = (int)sizeof(int);
        bdispls[r] = r * (int)sizeof(int);
        types[r] = MPI_INT;
    }
    MPI_Comm w = MPI_COMM_WORLD, ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(w, 1, dims, periods, 0, &ring);
    /* a ring's two neighbours: one block each; MPI_Aint displacements for Neighbor_alltoallw */
    static MPI_Aint adispls[2] = {0, sizeof(int)};
    /* A communicator's learning state is made by its first blocking collective (learn.c): the
     * started calls (and persistent requests made) on a communicator that has had none are
     * left to the library (the thread remembers that it has none). An application's
     * communicators usually have had one; `fresh` measures those that have not. */
    if (argc == 3) {
        MPI_Barrier(w);
        MPI_Barrier(ring);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    if (!strcmp(coll, "allreduce_init"))
        MPI_Allreduce_init(in, out, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &req);
    else if (!strcmp(coll, "allgather_init"))
        MPI_Allgather_init(in, 1, MPI_INT, out, 1, MPI_INT, w, MPI_INFO_NULL, &req);
    else if (!strcmp(coll, "allgatherv_init"))
        MPI_Allgatherv_init(in, 1, MPI_INT, out, counts, displs, MPI_INT, w, MPI_INFO_NULL, &req);
    else if (!strcmp(coll, "alltoallv_init"))
        MPI_Alltoallv_init(in, counts, displs, MPI_INT, out, counts, displs, MPI_INT, w, MPI_INFO_NULL,
                           &req);
    else if (!strcmp(coll, "bcast_init"))
        MPI_Bcast_init(in, 1, MPI_INT, 0, w, MPI_INFO_NULL, &req);
    int persistent = req != MPI_REQUEST_NULL;
    for (long i = 0; i < calls; i++) {
        if (persistent) {
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (!strcmp(coll, "allreduce"))
            MPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, w);
        else if (!strcmp(coll, "bcast"))
            MPI_Bcast(in, 1, MPI_INT, 0, w);
        else if (!strcmp(coll, "reduce"))
            MPI_Reduce(in, out, 1, MPI_INT, MPI_SUM, 0, w);
        else if (!strcmp(coll, "allgather"))
            MPI_Allgather(in, 1, MPI_INT, out, 1, MPI_INT, w);
        else if (!strcmp(coll, "gather"))
            MPI_Gather(in, 1, MPI_INT, out, 1, MPI_INT, 0, w);
        else if (!strcmp(coll, "scatter"))
            MPI_Scatter(in, 1, MPI_INT, out, 1, MPI_INT, 0, w);
        else if (!strcmp(coll, "alltoall"))
            MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, w);
        else if (!strcmp(coll, "barrier"))
            MPI_Barrier(w);
        else if (!strcmp(coll, "allgatherv"))
            MPI_Allgatherv(in, 1, MPI_INT, out, counts, displs, MPI_INT, w);
        else if (!strcmp(coll, "gatherv"))
            MPI_Gatherv(in, 1, MPI_INT, out, counts, displs, MPI_INT, 0, w);
        else if (!strcmp(coll, "scatterv"))
            MPI_Scatterv(in, counts, displs, MPI_INT, out, 1, MPI_INT, 0, w);
        else if (!strcmp(coll, "alltoallv"))
            MPI_Alltoallv(in, counts, displs, MPI_INT, out, counts, displs, MPI_INT, w);
        else if (!strcmp(coll, "alltoallw"))
            MPI_Alltoallw(in, bytes, bdispls, types, out, bytes, bdispls, types, w);
        else if (!strcmp(coll, "exscan"))
            MPI_Exscan(in, out, 1, MPI_INT, MPI_SUM, w);
        else if (!strcmp(coll, "neighbor_allgather"))
            MPI_Neighbor_allgather(in, 1, MPI_INT, out, 1, MPI_INT, ring);
        else if (!strcmp(coll, "neighbor_allgatherv"))
            MPI_Neighbor_allgatherv(in, 1, MPI_INT, out, counts, displs, MPI_INT, ring);
        else if (!strcmp(coll, "neighbor_alltoall"))
            MPI_Neighbor_alltoall(in, 1, MPI_INT, out, 1, MPI_INT, ring);
        else if (!strcmp(coll, "neighbor_alltoallv"))
            MPI_Neighbor_alltoallv(in, counts, displs, MPI_INT, out, counts, displs, MPI_INT, ring);
        else if (!strcmp(coll, "neighbor_alltoallw"))
            MPI_Neighbor_alltoallw(in, bytes, adispls, types, out, bytes, adispls, types, ring);
        else {
            if (!strcmp(coll, "iallreduce"))
                MPI_Iallreduce(in, out, 1, MPI_INT, MPI_SUM, w, &req);
            else if (!strcmp(coll, "ibcast"))
                MPI_Ibcast(in, 1, MPI_INT, 0, w, &req);
            else if (!strcmp(coll, "iallgather"))
                MPI_Iallgather(in, 1, MPI_INT, out, 1, MPI_INT, w, &req);
            else if (!strcmp(coll, "iallgatherv"))
                MPI_Iallgatherv(in, 1, MPI_INT, out, counts, displs, MPI_INT, w, &req);
            else if (!strcmp(coll, "ialltoallv"))
                MPI_Ialltoallv(in, counts, displs, MPI_INT, out, counts, displs, MPI_INT, w, &req);
            else if (!strcmp(coll, "ibarrier"))
                MPI_Ibarrier(w, &req);
            else if (!strcmp(coll, "ineighbor_allgather"))
                MPI_Ineighbor_allgather(in, 1, MPI_INT, out, 1, MPI_INT, ring, &req);
            else {
                fprintf(stderr, "collective_loop: unknown collective %s\n", coll);
                MPI_Abort(w, 2);
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
    }
    if (persistent)
        MPI_Request_free(&req);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}

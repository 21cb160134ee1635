/*
 * One collective in a tight loop, for the per-call cost of its wrapper (benchmarks/learning_runtime
 * rows.py runs it under callgrind, collecting only inside MPI_<Coll>): one int (or one int per
 * rank for the gather/scatter/all-to-all forms) on MPI_COMM_WORLD, root 0, MPI_SUM.
 *
 *   collective_loop COLLECTIVE CALLS
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
    if (argc < 3 || size > MAX_RANKS) {
        fprintf(stderr, "usage: collective_loop COLLECTIVE CALLS (at most %d ranks)\n", MAX_RANKS);
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
    MPI_Comm w = MPI_COMM_WORLD;
    for (long i = 0; i < calls; i++) {
        if (!strcmp(coll, "allreduce"))
            MPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, w);
        else if (!strcmp(coll, "bcast"))
            MPI_Bcast(in, 1, MPI_INT, 0, w);
        else if (!strcmp(coll, "reduce"))
            MPI_Reduce(in, out, 1, MPI_INT, MPI_SUM, 0, w);
        else if (!strcmp(coll, "allgather"))
            MPI_Allgather(in, 1, MPI_INT, out, 1, MPI_INT, w);
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
        else {
            fprintf(stderr, "collective_loop: unknown collective %s\n", coll);
            MPI_Abort(w, 2);
        }
    }
    MPI_Finalize();
    return 0;
}

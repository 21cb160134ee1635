/*
 * The new wrappers' pass-through path under callgrind (benchmarks/passthrough/forms.py): each of
 * CALLS iterations makes one 8-byte MPI_Iallreduce completed by MPI_Wait, one MPI_Start of a
 * persistent MPI_Allreduce_init request completed by MPI_Wait (where the library has persistent
 * collectives), and one MPI_Neighbor_allgather on a periodic ring: every function once per
 * iteration, so instructions / CALLS is the cost per call of each wrapper.
 * FORMS_LOOP_ONLY=allreduce (=iallreduce) makes each iteration one 8-byte MPI_Allreduce (one
 * MPI_Iallreduce + MPI_Wait) and nothing else: the learning mode's cost per blocking and per
 * started call, side by side; =allreduce_c and =iallreduce_c the same through the large-count
 * bindings (MPI 4 libraries); =start makes one MPI_Allreduce_init request (after a blocking
 * collective: the learning mode decides it) and each iteration one MPI_Start + MPI_Wait of it;
 * =stack makes each iteration call every wrapper with arguments on the stack that an
 * application can loop over cheaply: MPI_I{gatherv,scatterv,alltoallv,alltoallw} (+ MPI_Wait)
 * and, with persistent collectives, MPI_{Gatherv,Scatterv,Alltoallv,Alltoallw}_init (+
 * MPI_Request_free), the _c bindings of the four nonblocking ones too (MPI 4), one int per rank.
 *
 *   forms_loop CALLS [ignored]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PERSISTENT 1
#else
#define PERSISTENT 0
#endif

/* FORMS_LOOP_ONLY=stack: the 10- and 11-argument wrappers, each once per iteration. */
static void stack_loop(long calls, double *sum)
{
    int p;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int *in = calloc((size_t)p, sizeof(int)), *out = calloc((size_t)p, sizeof(int));
    int *counts = malloc((size_t)p * sizeof(int)), *displs = malloc((size_t)p * sizeof(int));
    int *bdispls = malloc((size_t)p * sizeof(int));
    MPI_Datatype *types = malloc((size_t)p * sizeof(MPI_Datatype));
    for (int r = 0; r < p; r++) {
        in[r] = r + 1;
        counts[r] = 1;
        displs[r] = r;
        bdispls[r] = r * (int)sizeof(int);
        types[r] = MPI_INT;
    }
#if MPI_VERSION >= 4
    MPI_Count *ccounts = malloc((size_t)p * sizeof(MPI_Count));
    MPI_Aint *cdispls = malloc((size_t)p * sizeof(MPI_Aint));
    MPI_Aint *cbdispls = malloc((size_t)p * sizeof(MPI_Aint));
    for (int r = 0; r < p; r++) {
        ccounts[r] = 1;
        cdispls[r] = r;
        cbdispls[r] = r * (MPI_Aint)sizeof(int);
    }
#endif
    MPI_Request rq;
    for (long i = 0; i < calls; i++) {
        MPI_Igatherv(in, 1, MPI_INT, out, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Iscatterv(in, counts, displs, MPI_INT, out, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Ialltoallv(in, counts, displs, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Ialltoallw(in, counts, bdispls, types, out, counts, bdispls, types, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
#if MPI_VERSION >= 4
        MPI_Igatherv_c(in, 1, MPI_INT, out, ccounts, cdispls, MPI_INT, 0, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Iscatterv_c(in, ccounts, cdispls, MPI_INT, out, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Ialltoallv_c(in, ccounts, cdispls, MPI_INT, out, ccounts, cdispls, MPI_INT, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Ialltoallw_c(in, ccounts, cbdispls, types, out, ccounts, cbdispls, types, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
#endif
#if PERSISTENT
        MPI_Gatherv_init(in, 1, MPI_INT, out, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
        MPI_Request_free(&rq);
        MPI_Scatterv_init(in, counts, displs, MPI_INT, out, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
        MPI_Request_free(&rq);
        MPI_Alltoallv_init(in, counts, displs, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &rq);
        MPI_Request_free(&rq);
        MPI_Alltoallw_init(in, counts, bdispls, types, out, counts, bdispls, types, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &rq);
        MPI_Request_free(&rq);
#endif
        for (int r = 0; r < p; r++)
            *sum += out[r];
    }
#if MPI_VERSION >= 4
    free(ccounts);
    free(cdispls);
    free(cbdispls);
#endif
    free(in);
    free(out);
    free(counts);
    free(displs);
    free(bdispls);
    free(types);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, dims[1], periods[1] = {1};
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    dims[0] = p;
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    long calls = argc > 1 ? atol(argv[1]) : 2000;
    /* a blocking collective first: the learning mode decides a communicator's nonblocking calls
     * only after its first blocking one (docs/select.md, "Nonblocking calls") */
    MPI_Barrier(MPI_COMM_WORLD);
    double in = 1.0, out = 0.0, sum = 0.0, nb[2];
    MPI_Request rq;
    const char *only = getenv("FORMS_LOOP_ONLY");
    int blocking_only = only != NULL && strcmp(only, "allreduce") == 0;
    int started_only = only != NULL && strcmp(only, "iallreduce") == 0;
    /* the large-count bindings (=allreduce_c, =iallreduce_c) where the library declares them */
    int large = only != NULL && MPI_VERSION >= 4 && strstr(only, "_c") != NULL;
    blocking_only |= large && strcmp(only, "allreduce_c") == 0;
    started_only |= large && strcmp(only, "iallreduce_c") == 0;
#if PERSISTENT
    if (only != NULL && strcmp(only, "start") == 0) {
        MPI_Allreduce_init(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
        for (long i = 0; i < calls; i++) {
            MPI_Start(&rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            sum += out;
        }
        MPI_Request_free(&rq);
        calls = 0;
    }
#endif
    if (only != NULL && strcmp(only, "stack") == 0) {
        stack_loop(calls, &sum);
        calls = 0;
    }
    for (long i = 0; i < calls && (blocking_only || started_only); i++) {
#if MPI_VERSION >= 4
        if (large && blocking_only)
            MPI_Allreduce_c(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (large)
            MPI_Iallreduce_c(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
        else
#endif
        if (blocking_only)
            MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
        if (started_only)
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        sum += out;
    }
    if (blocking_only || started_only)
        calls = 0;
#if PERSISTENT
    MPI_Request prq;
    MPI_Allreduce_init(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &prq);
#endif
    for (long i = 0; i < calls; i++) {
        MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        sum += out;
#if PERSISTENT
        MPI_Start(&prq);
        MPI_Wait(&prq, MPI_STATUS_IGNORE);
        sum += out;
#endif
        MPI_Neighbor_allgather(&in, 1, MPI_DOUBLE, nb, 1, MPI_DOUBLE, ring);
        sum += nb[0] + nb[1];
    }
#if PERSISTENT
    MPI_Request_free(&prq);
#endif
    MPI_Comm_free(&ring);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("sum %.1f\n", sum);
    MPI_Finalize();
    return 0;
}

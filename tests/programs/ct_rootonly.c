/*
 * Arguments that differ between ranks must never change a decision.
 *
 * Every call here is legal MPI in which root-only or ignored arguments differ between ranks:
 *   gather:  the root receives 1 element of a contiguous type of K ints per rank, the others
 *            send K MPI_INTs; non-roots pass garbage recvcount/recvtype (ignored there);
 *   scatter: the mirror image;
 *   bcast:   the root sends 1 element of a contiguous type of K ints, the others receive K ints.
 * With `gaps`, the root's datatype has the same type signature but gaps in its layout (a
 * vector of ints with stride 2): a variant that needs contiguous data may not serve the root
 * and still serve the others.
 * A decision that looked at a root-only argument would make the root pick another variant (or
 * the library) than the other ranks: the run would hang or give wrong data. Run it under a
 * forced variant or a profile with a timeout.
 *
 *   ct_rootonly [K] [gaps]    rank 0 prints "rootonly calls gather=N scatter=N bcast=N"
 */
#include <string.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

static void die(const char *what, int i, int got, int want)
{
    fprintf(stderr, "FAIL %s rank=%d index=%d got=%d want=%d\n", what, rank, i, got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int k = argc > 1 ? atoi(argv[1]) : 256;
    int gaps = argc > 2 && strcmp(argv[2], "gaps") == 0, stride = gaps ? 2 : 1;
    MPI_Datatype block;  /* k ints at the root, contiguous or every other int */
    MPI_Type_vector(k, 1, stride, MPI_INT, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)(k * stride * sizeof(int)), &block);
    MPI_Type_commit(&block);
    int *s = malloc((size_t)size * k * 2 * sizeof(int)), *r = malloc((size_t)size * k * 2 * sizeof(int));
    long gathers = 0, scatters = 0, bcasts = 0;

    for (int root = 0; root < size; root++) {
        /* gather */
        for (int i = 0; i < k; i++) s[i] = rank * k + i;
        for (int i = 0; i < size * k * stride; i++) r[i] = -1;
        if (rank == root)
            MPI_Gather(s, k, MPI_INT, r, 1, block, root, MPI_COMM_WORLD);
        else  /* recvcount/recvtype are ignored here: pass nonsense */
            MPI_Gather(s, k, MPI_INT, NULL, 12345 + rank, MPI_DOUBLE, root, MPI_COMM_WORLD);
        gathers++;
        if (rank == root)
            for (int i = 0; i < size * k; i++)
                if (r[i * stride] != i) die("gather", i, r[i * stride], i);

        /* scatter */
        for (int i = 0; i < size * k * stride; i++) s[i] = rank == root ? 3 * (i / stride) : -5;
        for (int i = 0; i < k; i++) r[i] = -1;
        if (rank == root)
            MPI_Scatter(s, 1, block, r, k, MPI_INT, root, MPI_COMM_WORLD);
        else
            MPI_Scatter(NULL, 999 + rank, MPI_CHAR, r, k, MPI_INT, root, MPI_COMM_WORLD);
        scatters++;
        for (int i = 0; i < k; i++)
            if (r[i] != 3 * (rank * k + i)) die("scatter", i, r[i], 3 * (rank * k + i));

        /* bcast: count 1 of `block` at the root, k MPI_INTs elsewhere */
        int step = rank == root ? stride : 1;
        for (int i = 0; i < k * step; i++) r[i] = rank == root ? 7 * (i / step) + root : -1;
        if (rank == root)
            MPI_Bcast(r, 1, block, root, MPI_COMM_WORLD);
        else
            MPI_Bcast(r, k, MPI_INT, root, MPI_COMM_WORLD);
        bcasts++;
        for (int i = 0; i < k; i++)
            if (r[i * step] != 7 * i + root) die("bcast", i, r[i * step], 7 * i + root);
    }
    if (rank == 0)
        printf("rootonly calls gather=%ld scatter=%ld bcast=%ld\n", gathers, scatters, bcasts);
    free(s);
    free(r);
    MPI_Type_free(&block);
    MPI_Finalize();
    return 0;
}

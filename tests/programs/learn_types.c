/*
 * The learning mode's per-thread cache of datatype sizes (native/core/ct_core.h) must give every
 * call its exact bytes: six predefined types in turn (more than the cache's four entries, so
 * they evict each other), and derived types created and freed between calls with a different
 * size each time (a freed handle may come back for the next type; derived types are never
 * cached). Every result is checked; the trace's msg_bytes are checked by the test.
 *
 *   learn_types ITERATIONS     prints "learn_types ok" on rank 0
 *
 * Call i (0-based) of iteration it: 2 * it is a predefined type types[it % 6] with count
 * 1 + it % 5 (MPI_Allreduce, MPI_SUM); 2 * it + 1 is contiguous(1 + it % 4, MPI_INT) with count 2
 * (MPI_Bcast from rank 0: MPI_SUM is for predefined types only).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "learn_types FAIL: " __VA_ARGS__);                               \
            fputc('\n', stderr);                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                    \
        }                                                                                    \
    } while (0)

static void fill(MPI_Datatype type, void *buf, int n, int value)
{
    for (int i = 0; i < n; i++) {
        if (type == MPI_INT) ((int *)buf)[i] = value;
        else if (type == MPI_DOUBLE) ((double *)buf)[i] = value;
        else if (type == MPI_SHORT) ((short *)buf)[i] = (short)value;
        else if (type == MPI_LONG_LONG) ((long long *)buf)[i] = value;
        else if (type == MPI_SIGNED_CHAR) ((signed char *)buf)[i] = (signed char)value;
        else ((float *)buf)[i] = (float)value;
    }
}

static long long get(MPI_Datatype type, const void *buf, int i)
{
    if (type == MPI_INT) return ((const int *)buf)[i];
    if (type == MPI_DOUBLE) return (long long)((const double *)buf)[i];
    if (type == MPI_SHORT) return ((const short *)buf)[i];
    if (type == MPI_LONG_LONG) return ((const long long *)buf)[i];
    if (type == MPI_SIGNED_CHAR) return ((const signed char *)buf)[i];
    return (long long)((const float *)buf)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 24;
    MPI_Datatype types[6] = {MPI_INT, MPI_DOUBLE, MPI_SHORT, MPI_LONG_LONG, MPI_SIGNED_CHAR,
                             MPI_FLOAT};
    long long sum = (long long)size * (size + 1) / 2;   /* ranks contribute rank + 1 */
    static char in[256], out[256];
    for (int it = 0; it < iterations; it++) {
        MPI_Datatype t = types[it % 6];
        int count = 1 + it % 5;
        fill(t, in, count, rank + 1);
        memset(out, 0, sizeof out);
        MPI_Allreduce(in, out, count, t, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < count; i++)
            CHECK(get(t, out, i) == sum, "iteration %d predefined element %d: %lld", it, i,
                  get(t, out, i));

        MPI_Datatype d;
        int block = 1 + it % 4;
        MPI_Type_contiguous(block, MPI_INT, &d);
        MPI_Type_commit(&d);
        for (int i = 0; i < 2 * block; i++)
            ((int *)out)[i] = rank == 0 ? 1000 * it + i : -1;
        MPI_Bcast(out, 2, d, 0, MPI_COMM_WORLD);
        for (int i = 0; i < 2 * block; i++)
            CHECK(((int *)out)[i] == 1000 * it + i, "iteration %d derived element %d: %d", it, i,
                  ((int *)out)[i]);
        MPI_Type_free(&d);
    }
    if (rank == 0)
        printf("learn_types ok\n");
    MPI_Finalize();
    return 0;
}

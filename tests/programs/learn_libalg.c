/*
 * Library members of the learning mode (tests/test_learn_libalg.py).
 *
 *   learn_libalg sums N COUNT   N allreduces of COUNT doubles on MPI_COMM_WORLD whose sum depends
 *                               on the order of additions; rank 0 prints "sum I HASH" per call
 *                               (FNV-1a of the result bytes), so a call's bits name the algorithm
 *                               class that produced them.
 *   learn_libalg comms N        N rounds of: dup the world, allreduce on the dup, free it; split
 *                               by parity, allreduce and bcast on the half, free it. Integer
 *                               results, checked exactly on every rank.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int sums(int n, int count, int rank)
{
    double *in = malloc((size_t)count * sizeof *in), *out = malloc((size_t)count * sizeof *out);
    if (in == NULL || out == NULL)
        return 1;
    /* Mixed magnitudes and signs: rounding depends on which partial sums meet first. */
    for (int i = 0; i < count; i++) {
        unsigned v = ((unsigned)i * 2654435761u + (unsigned)rank * 40503u) % 1000003u;
        in[i] = ldexp((double)v + 0.1 * rank, ((i + 3 * rank) % 7) * 9 - 30) * (((i + rank) & 1) ? -1 : 1);
    }
    for (int k = 0; k < n; k++) {
        int rc = MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return 1;
        if (rank == 0)
            printf("sum %d %016llx\n", k, (unsigned long long)fnv(out, (size_t)count * sizeof *out));
    }
    free(in);
    free(out);
    return 0;
}

static int check(int ok, const char *what, int round, int rank)
{
    if (!ok)
        printf("FAIL %s round=%d rank=%d\n", what, round, rank);
    return !ok;
}

static int comms(int n, int rank, int size)
{
    int bad = 0;
    for (int k = 0; k < n; k++) {
        MPI_Comm dup, half;
        long v = rank + k, sum = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, dup);
        bad |= check(sum == (long)size * (size - 1) / 2 + (long)size * k, "dup allreduce", k, rank);
        MPI_Comm_free(&dup);
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
        int hsize, hrank;
        MPI_Comm_size(half, &hsize);
        MPI_Comm_rank(half, &hrank);
        long want = 0;
        for (int r = rank % 2; r < size; r += 2)
            want += r + k;
        MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, half);
        bad |= check(sum == want, "half allreduce", k, rank);
        int data[4] = {0, 0, 0, 0};
        if (hrank == hsize - 1)
            for (int i = 0; i < 4; i++)
                data[i] = 100 * k + 10 * (rank % 2) + i;
        MPI_Bcast(data, 4, MPI_INT, hsize - 1, half);
        for (int i = 0; i < 4; i++)
            bad |= check(data[i] == 100 * k + 10 * (rank % 2) + i, "half bcast", k, rank);
        MPI_Comm_free(&half);
    }
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 4 && strcmp(argv[1], "sums") == 0)
        bad = sums(atoi(argv[2]), atoi(argv[3]), rank);
    else if (argc == 3 && strcmp(argv[1], "comms") == 0)
        bad = comms(atoi(argv[2]), rank, size);
    else if (rank == 0)
        fprintf(stderr, "usage: learn_libalg sums N COUNT | comms N\n");
    if (!bad && rank == 0)
        printf("learn_libalg %s ok\n", argv[1]);
    MPI_Finalize();
    return bad;
}

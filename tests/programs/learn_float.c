/*
 * 40 in-place MPI_Allreduce of 4096 doubles of mixed magnitudes (1e16 and 1) and signs: the
 * sum depends on the order of the additions, so an algorithm other than the library's gives
 * other last bits. The check mode of the learning mode must see it.
 *
 *   learn_float      prints "learn_float done <hash>" on rank 0, the hash of every result's bits
 */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4096, ITERATIONS = 40 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static double a[N];
    uint64_t hash = 1469598103934665603u;   /* FNV-1a over the results' bytes */
    for (int it = 0; it < ITERATIONS; it++) {
        srand((unsigned)(rank * 7919 + it));
        for (int i = 0; i < N; i++)
            a[i] = (rand() / (double)RAND_MAX) * (i % 3 == 0 ? 1e16 : 1.0) * (rand() % 2 ? 1 : -1);
        MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        const unsigned char *bytes = (const unsigned char *)a;
        for (size_t i = 0; i < sizeof a; i++)
            hash = (hash ^ bytes[i]) * 1099511628211u;
    }
    if (rank == 0)
        printf("learn_float done %016llx\n", (unsigned long long)hash);
    MPI_Finalize();
    return 0;
}

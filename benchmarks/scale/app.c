/*
 * The application of the scale benchmark (benchmarks/scale/README.md): `calls` rounds of an 8-byte
 * allreduce and a 1 KiB bcast on MPI_COMM_WORLD and on a split communicator (one per node-sized
 * group of 16 ranks), then a checksum of every result that rank 0 prints, so that runs with and
 * without the interposer can be compared for equal results.
 *
 * Usage: app [rounds [from to]]. With `from to` (0 <= from < to <= rounds), rounds from..to-1
 * run inside a callgrind instrumentation window (percall.py --window): every rank meets at a
 * PMPI_Barrier (SMPI's own, not intercepted), rank 0 switches instrumentation on, all meet again;
 * the same around its end. The second barrier of each pair keeps every other rank from running
 * colltune's code before rank 0 has switched: SMPI may resume the ranks of a finished barrier in
 * any order. Outside valgrind the switches are no-ops and the barriers change no result.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* valgrind's header is optional (the tests compile this program where valgrind may be absent):
 * without it the window is its barriers only, and percall.py --window finds no instruction */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION ((void)0)
#define CALLGRIND_STOP_INSTRUMENTATION ((void)0)
#endif

static unsigned long long mix(unsigned long long h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* Instrumentation on (on != 0) or off for every rank at once, between two PMPI barriers. */
static void window_edge(int rank, int on)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        if (on)
            CALLGRIND_START_INSTRUMENTATION;
        else
            CALLGRIND_STOP_INSTRUMENTATION;
    }
    PMPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 100, rank, size;
    int from = argc > 3 ? atoi(argv[2]) : -1, to = argc > 3 ? atoi(argv[3]) : -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 16, rank, &group);
    unsigned long long h = 14695981039346656037ULL;
    int block[256];
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; i++) {
        if (i == from)
            window_edge(rank, 1);
        MPI_Comm comm = i % 2 ? group : MPI_COMM_WORLD;
        long long mine = (long long)rank * 7 + i, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
        for (int k = 0; k < 256; k++)
            block[k] = rank == 0 ? i * 256 + k : -1;
        MPI_Bcast(block, 256, MPI_INT, 0, comm);
        h = mix(h, &sum, sizeof sum);
        h = mix(h, block, sizeof block);
        if (i + 1 == to)
            window_edge(rank, 0);
    }
    double elapsed = MPI_Wtime() - t0;
    unsigned long long all = 0;
    h = mix(h, &rank, sizeof rank);   /* a sum of equal hashes could cancel out; of these not */
    MPI_Reduce(&h, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("scale-app ranks %d calls %d checksum %016llx simulated_s %.9f\n", size, calls, all, elapsed);
    MPI_Comm_free(&group);
    MPI_Finalize();
    return 0;
}

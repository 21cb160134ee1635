/* More call chains than the profiling's memo tables had entries (tests/test_advise_profile.py,
 * benchmarks/advise/manychains.py): CHAINS paths (argv[1], default 300) through a recursion five
 * levels deep, each level one of four call instructions (the path's base-4 digits), reach leaf(),
 * whose MPI_Allreduce, MPI_Irecv, MPI_Isend and MPI_Waitall are then each reached through CHAINS
 * chains (4 x 300 = 1,200 chains in all: Quantum ESPRESSO's pw.x has 1,214). Every path is taken
 * in turn, ROUNDS times (argv[2], default 100), so a memo entry that two chains share is
 * rewritten at every call. Two ranks. Rank 0 prints "many_chains SUM HALO". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long steps;   /* (after each call: no tail call removes a frame) */

static __attribute__((noinline)) double leaf(double x)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double y = 0, in = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request q[2];
    MPI_Irecv(&in, 1, MPI_DOUBLE, 1 - rank, 7, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&x, 1, MPI_DOUBLE, 1 - rank, 7, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    steps++;
    return y + in;
}

/* One of four call instructions per level, by the path's lowest base-4 digit: their arguments
 * and what follows them differ, so that the compiler keeps four calls. */
static __attribute__((noinline)) double level(int depth, unsigned path, double x)
{
    double r;
    if (depth == 0) {
        r = leaf(x);
        steps++;
        return r;
    }
    switch (path & 3) {
    case 0:
        r = level(depth - 1, path >> 2, x);
        steps += 1;
        break;
    case 1:
        r = level(depth - 1, path >> 2, x + 1) - 1;
        steps += 2;
        break;
    case 2:
        r = level(depth - 1, path >> 2, x + 2) - 2;
        steps += 3;
        break;
    default:
        r = level(depth - 1, path >> 2, x + 3) - 3;
        steps += 4;
        break;
    }
    return r;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    unsigned chains = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
    long rounds = argc > 2 ? atol(argv[2]) : 100;
    if (chains < 1 || chains > 1024) {
        fprintf(stderr, "advise_many_chains: CHAINS must be 1-1024 (five base-4 digits)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double total = 0;
    for (long r = 0; r < rounds; r++)
        for (unsigned c = 0; c < chains; c++)
            total += level(5, c, 1.0);
    if (rank == 0)
        printf("many_chains %.1f %ld\n", total, (long)steps);
    MPI_Finalize();
    return 0;
}

/* One MPI call reached through many callers at one stack depth (tests/test_advise_profile.py,
 * the chain cache): eight callers with the same frame call sum(), whose MPI_Allreduce is one
 * site at one stack depth with eight chains above it, in turn, ROUNDS times (argv[1], default
 * 1000), as a recursive code reaches its MPI calls (ExaML: 60 chains at one site). Each caller
 * then exchanges with the other rank through exchange_a() and exchange_b(), which both call
 * halo() (MPI_Irecv, MPI_Isend, MPI_Waitall): 16 chains at each of those sites, which the frame
 * above the site tells apart only 2 ways, as OpenFOAM's MPI_Waitall site (20 chains, 4 frames
 * above it). Each chain is unwound once, however many of them share the site. Two ranks. Rank 0
 * prints "chains SUM HALO". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long exchanges;   /* (after each call: no tail call removes a frame) */

static __attribute__((noinline)) double sum(double x)
{
    double y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

static __attribute__((noinline)) double halo(double x)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double in = 0;
    MPI_Request q[2];
    MPI_Irecv(&in, 1, MPI_DOUBLE, 1 - rank, 7, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&x, 1, MPI_DOUBLE, 1 - rank, 7, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    exchanges++;
    return in;
}

static __attribute__((noinline)) double exchange_a(double x)
{
    double in = halo(x);
    exchanges++;
    return in;
}

static __attribute__((noinline)) double exchange_b(double x)
{
    double in = halo(x + 1);
    exchanges++;
    return in;
}

#define CALLER(n)                                                                                  \
    static __attribute__((noinline)) double caller##n(double x, double *got)                       \
    {                                                                                              \
        double s = sum(x + n) - n;                                                                 \
        *got += exchange_a(x) + exchange_b(x);                                                     \
        exchanges++;                                                                               \
        return s;                                                                                  \
    }
CALLER(1)
CALLER(2)
CALLER(3)
CALLER(4)
CALLER(5)
CALLER(6)
CALLER(7)
CALLER(8)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double (*const callers[])(double, double *) = {caller1, caller2, caller3, caller4,
                                                   caller5, caller6, caller7, caller8};
    double total = 0, got = 0;
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < 8; k++)
            total += callers[k](1.0, &got);
    if (rank == 0)
        printf("chains %.1f %.1f\n", total, got);
    MPI_Finalize();
    return 0;
}

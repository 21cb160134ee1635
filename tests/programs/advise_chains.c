/* One MPI call reached through many callers at one stack depth (tests/test_advise_profile.py,
 * the chain cache): eight callers with the same frame call sum(), whose MPI_Allreduce is one
 * site at one stack depth with eight chains above it, in turn, ROUNDS times (argv[1], default
 * 1000), as a recursive code reaches its MPI calls (ExaML: 60 chains at one site). Each chain is
 * unwound once, however many of them share the site. Rank 0 prints "chains SUM". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) double sum(double x)
{
    double y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

#define CALLER(n)                                                                                  \
    static __attribute__((noinline)) double caller##n(double x)                                    \
    {                                                                                              \
        return sum(x + n) - n;                                                                     \
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
    double (*const callers[])(double) = {caller1, caller2, caller3, caller4,
                                         caller5, caller6, caller7, caller8};
    double total = 0;
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < 8; k++)
            total += callers[k](1.0);
    if (rank == 0)
        printf("chains %.1f\n", total);
    MPI_Finalize();
    return 0;
}

/* The collectives' light path across communicators (tests/test_advise_light_run.py), 2 ranks or
 * more:   advise_light_comms STEPS
 * Each step: an MPI_Allreduce on MPI_COMM_WORLD, then one on `pair` (a duplicate of it), so the
 * wrappers' one-communicator cache misses on every call; every 4th step two more on `pair`
 * back to back (it hits); an MPI_Reduce to root 1 on `pair` every 3rd step and an MPI_Bcast from
 * rank 0 on MPI_COMM_WORLD every 5th. Every 50th step `pair` is freed and made again (its state
 * freed with it: a library may give the new one the same handle). Exact counts a rank:
 * Allreduce 2 STEPS + 2 ceil(STEPS/4) + 1 (the last sum), Reduce ceil(STEPS/3), Bcast ceil(STEPS/5). Rank 0 prints
 * "comms SUM": the same in every run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noipa)) long sum_on(MPI_Comm comm, long x)
{
    long y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_LONG, MPI_SUM, comm);
    return y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long steps = argc > 1 ? atol(argv[1]) : 1000, sum = 0;
    MPI_Comm pair;
    MPI_Comm_dup(MPI_COMM_WORLD, &pair);
    for (long s = 0; s < steps; s++) {
        sum += sum_on(MPI_COMM_WORLD, rank + s % 7);
        sum += 3 * sum_on(pair, rank - s % 5);
        if (s % 4 == 0) {
            sum += 5 * sum_on(pair, s % 11);
            sum += 7 * sum_on(pair, rank * (s % 3));
        }
        if (s % 3 == 0) {
            long x = rank + s, y = 0;
            MPI_Reduce(&x, &y, 1, MPI_LONG, MPI_MAX, 1, pair);
            sum += rank == 1 ? y : 0;
        }
        if (s % 7 == 3)   /* a collective without a light path on the wrappers' communicator */
            MPI_Barrier(pair);
        if (s % 5 == 0) {
            long flag = s % 13;
            MPI_Bcast(&flag, 1, MPI_LONG, 0, MPI_COMM_WORLD);
            sum += flag;
        }
        if (s % 50 == 49) {
            MPI_Comm_free(&pair);
            MPI_Comm_dup(MPI_COMM_WORLD, &pair);
        }
    }
    MPI_Comm_free(&pair);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("comms %ld\n", sum);
    MPI_Finalize();
    return 0;
}

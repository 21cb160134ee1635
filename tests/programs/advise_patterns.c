/* Planted call patterns and near misses for colltune advise (tests/test_advise_patterns.py).
 * Patterns, per rank: 12 MPI_Reduce to root 1 + MPI_Bcast of the reduce's result from root 1
 * (reduce_bcast), 8 pairs of small independent MPI_Allreduce back to back (small_reductions),
 * 6 MPI_Barrier directly before an MPI_Allreduce (barrier_before_sync). Near misses, 5 each,
 * that must not match: another root, another count, another buffer, a call in between; a second
 * reduction that reads the first's result, another op, large reductions; a barrier before a
 * broadcast, a barrier with a call in between; small reductions with a poll in between. An
 * MPI_Bcast separates the groups so that no pattern spans two of them. Needs 2 ranks or more. */
#include <mpi.h>
#include <string.h>

static double x[1024], r[1024], r2[1024], big_in[1024], big_out[1024];
static int rank;

static void separator(void)
{
    MPI_Bcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

static void exchange(void)   /* a point-to-point call on both ranks: an intervening MPI call */
{
    if (rank == 0)
        MPI_Send(x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
    else if (rank == 1)
        MPI_Recv(r2, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) static void planted(void)
{
    for (int i = 0; i < 12; i++) {
        MPI_Reduce(x, r, 4, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
        MPI_Bcast(r, 4, MPI_DOUBLE, 1, MPI_COMM_WORLD);
        separator();
    }
    for (int i = 0; i < 8; i++) {
        MPI_Allreduce(x, r, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(x + 2, r + 2, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        separator();
    }
    for (int i = 0; i < 6; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(x, r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        separator();
    }
}

/* A poll between two calls (on the profiling run's light path: counted by its function's
 * countdown alone) separates them as any MPI call does. */
static void poll_test(void)
{
    MPI_Request none = MPI_REQUEST_NULL;
    int flag = 0;
    MPI_Test(&none, &flag, MPI_STATUS_IGNORE);
}

static void poll_testall(void)
{
    MPI_Request none[1] = {MPI_REQUEST_NULL};
    int flag = 0;
    MPI_Testall(1, none, &flag, MPI_STATUSES_IGNORE);
}

__attribute__((noinline)) static void near_misses(void)
{
    for (int i = 0; i < 5; i++) {
        MPI_Reduce(x, r, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);   /* another root */
        MPI_Bcast(r, 4, MPI_DOUBLE, 1, MPI_COMM_WORLD);
        separator();
        MPI_Reduce(x, r, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);   /* another count */
        MPI_Bcast(r, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        separator();
        MPI_Reduce(x, r, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);   /* another buffer */
        MPI_Bcast(r2, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        separator();
        MPI_Reduce(x, r, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);   /* a call in between */
        exchange();
        MPI_Bcast(r, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        separator();
        MPI_Allreduce(x, r, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);   /* reads the result */
        MPI_Allreduce(r, r2, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        separator();
        MPI_Allreduce(x, r, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);   /* another op */
        MPI_Allreduce(x + 2, r + 2, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        separator();
        MPI_Allreduce(big_in, big_out, 600, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);   /* large */
        MPI_Allreduce(x, r, 600, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        separator();
        MPI_Barrier(MPI_COMM_WORLD);   /* before a collective that does not synchronise */
        MPI_Bcast(r, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        separator();
        MPI_Barrier(MPI_COMM_WORLD);   /* a call in between */
        exchange();
        MPI_Allreduce(x, r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        separator();
        MPI_Allreduce(x, r, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);   /* a poll in between */
        poll_test();
        MPI_Allreduce(x + 2, r + 2, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        separator();
        MPI_Allreduce(x, r, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);   /* another function's */
        poll_testall();
        MPI_Allreduce(x + 2, r + 2, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        separator();
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 1024; i++)
        x[i] = rank + i;
    planted();
    near_misses();
    MPI_Finalize();
    return 0;
}

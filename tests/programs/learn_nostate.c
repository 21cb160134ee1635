/*
 * Communicators whose first collectives are nonblocking: the learning mode has no state for them
 * until their first blocking collective (learn.c), leaves those calls to the library, and each
 * thread remembers "no state" in its one-entry cache instead of asking for the attribute again
 * at every call. That memory must not outlive the state's making:
 *
 *   c: the main thread starts CALLS MPI_Iallreduce + MPI_Wait (no state), another thread makes
 *      the state with one blocking MPI_Allreduce (joined), then the main thread starts CALLS more:
 *      those are the learning mode's (a stale "no state" on one rank would leave them to the
 *      library there while the other ranks draw: different algorithms, wrong sums or a hang);
 *   d: the same with the blocking MPI_Allreduce on the main thread.
 *
 * Every sum is checked. The calls of another thread are serialized with the main thread's by
 * pthread_join (MPI_THREAD_SERIALIZED).
 *
 *   learn_nostate [CALLS]      default 5; prints "learn_nostate ok calls=N"
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size, failures;

static void expect_sum(int got, int salt, const char *what)
{
    int want = size * salt + size * (size - 1) / 2;   /* sum over ranks of rank + salt */
    if (got != want) {
        fprintf(stderr, "FAIL rank %d %s: got %d want %d\n", rank, what, got, want);
        failures++;
    }
}

static void started(MPI_Comm comm, int calls, int salt)
{
    for (int i = 0; i < calls; i++) {
        int in = rank + salt + i, out = -1;
        MPI_Request req;
        MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect_sum(out, salt + i, "iallreduce");
    }
}

static void blocking(MPI_Comm comm, int salt)
{
    int in = rank + salt, out = -1;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm);
    expect_sum(out, salt, "allreduce");
}

static void *other_thread(void *arg)
{
    blocking(*(MPI_Comm *)arg, 100);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_SERIALIZED) {
        fprintf(stderr, "FAIL rank %d: MPI_THREAD_SERIALIZED not provided (%d)\n", rank, provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int calls = argc > 1 ? atoi(argv[1]) : 5;
    MPI_Comm c, d;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);

    started(c, calls, 1);
    pthread_t t;
    if (pthread_create(&t, NULL, other_thread, &c) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "FAIL rank %d: thread\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    started(c, calls, 1000);

    started(d, calls, 2000);
    blocking(d, 3000);
    started(d, calls, 4000);

    MPI_Comm_free(&c);
    MPI_Comm_free(&d);
    if (rank == 0 && failures == 0)
        printf("learn_nostate ok calls=%d\n", 4 * calls + 2);
    MPI_Finalize();
    return failures != 0;
}

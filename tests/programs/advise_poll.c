/* A polling code in miniature (tests/test_advise_profile.py: the watched Wait/Test path in the
 * profiling budget, and a poll's time attributed to the collective it completes), 2 ranks or more:
 *   advise_poll POLLS REDUCTIONS
 * 1. POLLS calls of MPI_Test on a receive from the previous rank that cannot complete: that rank
 *    sends only after the MPI_Barrier that follows. Exactly POLLS polls, none completing, at two
 *    sites: 3 of 4 at test_a, 1 of 4 at test_b. Then MPI_Test at test_c until the receive
 *    completes; each rank prints "rank R test N" (its number of those polls, the last completes).
 * 2. REDUCTIONS MPI_Allreduce of 8 bytes (with a small budget the polls' own cost is over it
 *    before the first sampled call, so every synchronisation widens the period).
 * 3. An MPI_Iallreduce polled with MPI_Testany over (its request, a receive that cannot complete
 *    before the MPI_Barrier after the loop) until it completes; each rank prints
 *    "rank R testany N" (its number of polls). Every poll's time is shared half and half between
 *    the two requests: the MPI_Iallreduce's waiting equals the MPI_Testany point's time.
 * Rank 0 prints "poll SUM": the same in every run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size, prev, next;

/* Three sites (noipa: identical functions are not folded into one) */
static __attribute__((noipa)) int test_a(MPI_Request *r)
{
    int flag = 0;
    MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    return flag;
}

static __attribute__((noipa)) int test_b(MPI_Request *r)
{
    int flag = 0;
    MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    return flag;
}

static __attribute__((noipa)) int test_c(MPI_Request *r)
{
    int flag = 0;
    MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    return flag;
}

static __attribute__((noinline)) void poll_nothing(long polls)
{
    int token = 0, got = -1;
    long tests = 0;
    MPI_Request recv;
    MPI_Irecv(&got, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &recv);
    for (long i = 0; i < polls; i++) {
        if (i % 4 == 3 ? test_b(&recv) : test_a(&recv)) {
            fprintf(stderr, "advise_poll: a receive completed before its send\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&token, 1, MPI_INT, next, 1, MPI_COMM_WORLD);
    do
        tests++;
    while (!test_c(&recv));
    printf("rank %d test %ld\n", rank, tests);
    fflush(stdout);
}

static __attribute__((noinline)) double poll_collective(void)
{
    double x = rank + 1, y = 0;
    int token = 0, got = -1, index = -1, flag = 0;
    long polls = 0;
    MPI_Request req[2];
    MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&got, 1, MPI_INT, prev, 2, MPI_COMM_WORLD, &req[1]);
    do {
        MPI_Testany(2, req, &index, &flag, MPI_STATUS_IGNORE);
        polls++;
        if (flag && index != 0) {
            fprintf(stderr, "advise_poll: a receive completed before its send\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } while (!flag);
    printf("rank %d testany %ld\n", rank, polls);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&token, 1, MPI_INT, next, 2, MPI_COMM_WORLD);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    return y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long polls = argc > 1 ? atol(argv[1]) : 1000;
    long reductions = argc > 2 ? atol(argv[2]) : 100;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    prev = (rank + size - 1) % size;
    next = (rank + 1) % size;
    poll_nothing(polls);
    double sum = 0, one = 1, out = 0;
    for (long r = 0; r < reductions; r++) {
        MPI_Allreduce(&one, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += out;
    }
    sum += poll_collective();
    if (rank == 0)
        printf("poll %.1f\n", sum);
    MPI_Finalize();
    return 0;
}

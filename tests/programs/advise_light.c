/* A call-heavy code in miniature for the profiling mode's light path (tests/test_advise_light_run.py),
 * 2 ranks or more:   advise_light STEPS [POLLS]
 * Each step: a halo exchange with both neighbours (MPI_Irecv, MPI_Isend, MPI_Waitall) made at
 * halo_a on 3 steps of 4 and at halo_b on the 4th, then two MPI_Allreduce of 8 bytes back to back
 * (a "small reductions" pair: norm_a then norm_b, the second's input not the first's result),
 * then an MPI_Bcast of 4 bytes on every 8th step. Exact counts a rank: Isend and Irecv 2 STEPS,
 * Waitall STEPS (3/4 at halo_a's sites, 1/4 at halo_b's), Allreduce 2 STEPS (STEPS at each site),
 * Bcast STEPS/8. With POLLS, each step first polls a receive that completes only after the loop
 * POLLS times with MPI_Test (at poll_wait: STEPS x POLLS a rank, then until it completes), as
 * a code that polls far more often than it calls anything else (HPCC's RandomAccess).
 * Rank 0 prints "light SUM": the same in every run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size, prev, next;

static __attribute__((noipa)) void halo_a(double *out, double *in)
{
    MPI_Request r[4];
    MPI_Irecv(&in[0], 2, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(&in[2], 2, MPI_DOUBLE, next, 8, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(&out[0], 2, MPI_DOUBLE, next, 7, MPI_COMM_WORLD, &r[2]);
    MPI_Isend(&out[2], 2, MPI_DOUBLE, prev, 8, MPI_COMM_WORLD, &r[3]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
}

static __attribute__((noipa)) void halo_b(double *out, double *in)
{
    MPI_Request r[4];
    MPI_Irecv(&in[0], 2, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(&in[2], 2, MPI_DOUBLE, next, 10, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(&out[0], 2, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, &r[2]);
    MPI_Isend(&out[2], 2, MPI_DOUBLE, prev, 10, MPI_COMM_WORLD, &r[3]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
}

static __attribute__((noipa)) double norm_a(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

static __attribute__((noipa)) double norm_b(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

static __attribute__((noipa)) int poll_wait(MPI_Request *r, long polls)
{
    int done = 0;
    for (long i = 0; i < polls; i++)
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
    return done;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    prev = (rank + size - 1) % size;
    next = (rank + 1) % size;
    long steps = argc > 1 ? atol(argv[1]) : 1000, polls = argc > 2 ? atol(argv[2]) : 0;
    double out[4] = {rank, rank + 1, rank + 2, rank + 3}, in[4] = {0}, sum = 0;
    int late = 0, sent = 1;
    MPI_Request pending = MPI_REQUEST_NULL;
    if (polls > 0)   /* from this rank itself, sent after the loop: no poll completes it before */
        MPI_Irecv(&late, 1, MPI_INT, rank, 99, MPI_COMM_WORLD, &pending);
    for (long s = 0; s < steps; s++) {
        if (polls > 0 && poll_wait(&pending, polls)) {
            fprintf(stderr, "rank %d: the pending receive completed before its send\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (s % 4 == 3)
            halo_b(out, in);
        else
            halo_a(out, in);
        double a = norm_a(in[0] + (double)(s % 7));
        double b = norm_b(in[3] - (double)(s % 5));
        sum += a - b;
        if (s % 8 == 0) {
            int flag = (int)(s % 3);
            MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
            sum += flag;
        }
    }
    if (polls > 0) {
        MPI_Send(&sent, 1, MPI_INT, rank, 99, MPI_COMM_WORLD);
        while (!poll_wait(&pending, 1))
            ;
        sum += late;
    }
    if (rank == 0)
        printf("light %.1f\n", sum);
    MPI_Finalize();
    return 0;
}

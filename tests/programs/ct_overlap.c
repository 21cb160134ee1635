/*
 * Nonblocking collectives that point-to-point traffic must overtake (issue 33): each is started
 * (MPI_I<coll>, or MPI_Start of a persistent Barrier_init or Allreduce_init request, made once in
 * the first round after the first blocking collective so that the learning mode decides them),
 * then the last rank sends to rank 0 with MPI_Ssend, which completes only once rank 0 has posted
 * the matching receive, and rank 0 posts it only after starting the collective while the last
 * rank starts it only after the send. A start that blocked until every rank arrived would
 * deadlock here. Each round also runs a blocking MPI_Allreduce while an MPI_Iallreduce is pending
 * (what --force and the learning mode serve), and completes requests by Wait, a Test loop and a
 * Waitall that mixes collective and point-to-point requests (an Ibcast, and the starts of a
 * persistent Bcast_init request). Every result is checked against its closed form (exit 1,
 * "FAIL" on stderr, and the count of failures on stdout).
 *
 *   ct_overlap [-r ROUNDS]     default 5
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT 1
#else
#define HAVE_PERSISTENT 0
#endif

#define N 64

static int rank, size, failures;

static void expect(int ok, const char *what, int round)
{
    if (!ok) {
        fprintf(stderr, "FAIL rank %d round %d: %s\n", rank, round, what);
        failures++;
    }
}

/* The last rank's synchronous send to rank 0: rank 0 receives it with its collective pending
 * and the last rank starts the collective only after it, so the send returns only once rank 0
 * has started the collective and returned from the start. */
static void overtake(int round)
{
    int token = round * 7 + 1, got = -1;
    if (rank == 0) {
        MPI_Recv(&got, 1, MPI_INT, size - 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        expect(got == token, "token", round);
    } else if (rank == size - 1) {
        MPI_Ssend(&token, 1, MPI_INT, 0, round, MPI_COMM_WORLD);
    }
}

/* Ibarrier posted before the send on rank 0, after it on the last rank; completed by Wait. */
static void barrier_round(int round)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == size - 1)
        overtake(round);
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (rank != size - 1)
        overtake(round);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect(req == MPI_REQUEST_NULL, "Ibarrier request freed", round);
}

/* Iallreduce pending across the send and a blocking Allreduce (which --force and the learning
 * mode serve by a mock-up or a library algorithm); completed by a Test loop. */
static void allreduce_round(int round)
{
    int in[N], out[N], bin[N], bout[N];
    for (int i = 0; i < N; i++) {
        in[i] = rank * N + i + round;
        bin[i] = (rank + 1) * (i + 2) - round;
    }
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == size - 1)
        overtake(round);
    MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    if (rank != size - 1)
        overtake(round);
    MPI_Allreduce(bin, bout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int done = 0;
    while (!done)
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) {
        expect(out[i] == N * size * (size - 1) / 2 + size * (i + round), "Iallreduce sum", round);
        expect(bout[i] == size * (size + 1) / 2 * (i + 2) - size * round, "Allreduce sum", round);
    }
}

/* Ibcast (Ibcast_c) from a rotating root, a ring exchange by Isend/Irecv, one Waitall for all
 * three. */
static void bcast_round(int round)
{
    int root = round % size, buf[N], next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int sent = rank + 100 * round, got = -1;
    for (int i = 0; i < N; i++)
        buf[i] = rank == root ? i * 3 + round : -1;
    MPI_Request reqs[3];
#if MPI_VERSION >= 4
    /* the large-count binding where the library declares it (MPICH: mpi4py calls only these) */
    MPI_Ibcast_c(buf, N, MPI_INT, root, MPI_COMM_WORLD, &reqs[0]);
#else
    MPI_Ibcast(buf, N, MPI_INT, root, MPI_COMM_WORLD, &reqs[0]);
#endif
    MPI_Irecv(&got, 1, MPI_INT, prev, 1000 + round, MPI_COMM_WORLD, &reqs[1]);
    MPI_Isend(&sent, 1, MPI_INT, next, 1000 + round, MPI_COMM_WORLD, &reqs[2]);
    MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++)
        expect(buf[i] == i * 3 + round, "Ibcast", round);
    expect(got == prev + 100 * round, "ring", round);
}

#if HAVE_PERSISTENT
/* A persistent request started with the send overtaking it, completed by Wait; it stays. */
static void start_overtaken(MPI_Request *req, int round)
{
    if (rank == size - 1)
        overtake(round);
    MPI_Start(req);
    if (rank != size - 1)
        overtake(round);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    expect(*req != MPI_REQUEST_NULL, "persistent request kept", round);
}

/* The persistent requests and their buffers, made once (persistent_init). */
typedef struct persistent {
    MPI_Request barrier, allreduce, bcast;
    int in[N], out[N], buf[N];
} persistent;

static void persistent_init(persistent *p)
{
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &p->barrier);
    MPI_Allreduce_init(p->in, p->out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &p->allreduce);
    MPI_Bcast_init(p->buf, N, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &p->bcast);
}

/* The Bcast_init request (root: the last rank) started, then a ring exchange, one Waitall for
 * the three: a start never completed alone. */
static void persistent_bcast(persistent *p, int round)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, sent = rank + 10 * round, got = -1;
    for (int i = 0; i < N; i++)
        p->buf[i] = rank == size - 1 ? i * 5 + round : -1;
    MPI_Start(&p->bcast);
    MPI_Request reqs[3] = {p->bcast, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Irecv(&got, 1, MPI_INT, prev, 2000 + round, MPI_COMM_WORLD, &reqs[1]);
    MPI_Isend(&sent, 1, MPI_INT, next, 2000 + round, MPI_COMM_WORLD, &reqs[2]);
    MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
    expect(reqs[0] == p->bcast, "persistent Bcast request kept", round);
    for (int i = 0; i < N; i++)
        expect(p->buf[i] == i * 5 + round, "Bcast_init", round);
    expect(got == prev + 10 * round, "ring", round);
}

/* Each persistent request started once a round. */
static void persistent_round(int round, persistent *p)
{
    for (int i = 0; i < N; i++)
        p->in[i] = rank + i * round;
    start_overtaken(&p->barrier, round);
    start_overtaken(&p->allreduce, round);
    for (int i = 0; i < N; i++)
        expect(p->out[i] == size * (size - 1) / 2 + size * i * round, "Allreduce_init sum", round);
    persistent_bcast(p, round);
}
#endif

int main(int argc, char **argv)
{
    int rounds = 5;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-r") == 0)
            rounds = atoi(argv[++i]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if HAVE_PERSISTENT
    static persistent p;
#endif
    for (int r = 0; r < rounds; r++) {
        barrier_round(r);
        allreduce_round(r);
        bcast_round(r);
#if HAVE_PERSISTENT
        if (r == 0)
            persistent_init(&p);
        persistent_round(r, &p);
#endif
    }
#if HAVE_PERSISTENT
    if (rounds > 0) {
        MPI_Request_free(&p.allreduce);
        MPI_Request_free(&p.barrier);
        MPI_Request_free(&p.bcast);
    }
#endif
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("overlap: %d rounds, persistent %d, %d failures\n", rounds, HAVE_PERSISTENT, all);
    MPI_Finalize();
    return all ? 1 : 0;
}

/*
 * MPI_THREAD_MULTIPLE: two threads run collectives at the same time, each on its own duplicate
 * of MPI_COMM_WORLD, and check every result. Under the interposer this exercises concurrent
 * decisions, counting and variants' scratch memory (per communicator) at once.
 *
 *   ct_threads [ITERATIONS]      rank 0 prints "threads calls allreduce=N bcast=N allgather=N"
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 300   /* ints per call: large enough for variants to use scratch buffers */

typedef struct worker {
    MPI_Comm comm;
    int id, iterations, rank, size;
    long calls;
} worker;

static void die(const worker *w, const char *what, int it, int i, int got, int want)
{
    fprintf(stderr, "FAIL thread %d %s rank=%d iteration=%d index=%d got=%d want=%d\n", w->id,
            what, w->rank, it, i, got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void *work(void *arg)
{
    worker *w = arg;
    int *s = malloc(N * sizeof(int)), *r = malloc((size_t)w->size * N * sizeof(int));
    if (s == NULL || r == NULL) die(w, "malloc", 0, 0, 0, 0);
    for (int it = 0; it < w->iterations; it++) {
        int salt = w->id * 7919 + it;
        for (int i = 0; i < N; i++) s[i] = w->rank + i + salt;
        if (MPI_Allreduce(s, r, N, MPI_INT, MPI_SUM, w->comm) != MPI_SUCCESS) die(w, "allreduce rc", it, 0, 0, 0);
        for (int i = 0; i < N; i++) {
            int want = w->size * (i + salt) + w->size * (w->size - 1) / 2;
            if (r[i] != want) die(w, "allreduce", it, i, r[i], want);
        }
        int root = it % w->size;
        for (int i = 0; i < N; i++) r[i] = w->rank == root ? i * 3 + salt : -1;
        if (MPI_Bcast(r, N, MPI_INT, root, w->comm) != MPI_SUCCESS) die(w, "bcast rc", it, 0, 0, 0);
        for (int i = 0; i < N; i++)
            if (r[i] != i * 3 + salt) die(w, "bcast", it, i, r[i], i * 3 + salt);
        if (MPI_Allgather(s, N, MPI_INT, r, N, MPI_INT, w->comm) != MPI_SUCCESS) die(w, "allgather rc", it, 0, 0, 0);
        for (int q = 0; q < w->size; q++)
            for (int i = 0; i < N; i++)
                if (r[q * N + i] != q + i + salt) die(w, "allgather", it, i, r[q * N + i], q + i + salt);
        w->calls++;
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, iterations = argc > 1 ? atoi(argv[1]) : 50;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "SKIP MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Finalize();
        return 77;
    }
    worker w[2];
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        w[t] = (worker){.id = t, .iterations = iterations};
        MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
        MPI_Comm_rank(w[t].comm, &w[t].rank);
        MPI_Comm_size(w[t].comm, &w[t].size);
    }
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, work, &w[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    long total = w[0].calls + w[1].calls;
    if (w[0].rank == 0)
        printf("threads calls allreduce=%ld bcast=%ld allgather=%ld\n", total, total, total);
    for (int t = 0; t < 2; t++)
        MPI_Comm_free(&w[t].comm);
    MPI_Finalize();
    return 0;
}

/*
 * Calls each of the 10 collectives that colltune can replace, checks every result exactly, and
 * reports how many calls of each kind it made, so that a test can compare them with the
 * interposer's counting table.
 *
 *   ct_collectives [-r REPEAT] [-t] [COLLECTIVE ...]      (default: all ten)
 *
 * -t also checks that an in-place Reduce_scatter(_block) leaves the receive buffer past the
 * caller's block untouched, as every MPI library does (mpi4py's test suite relies on it).
 *
 * Kinds of calls (rank 0 prints "calls COLL plain=N inplace=N noncontig=N noncommutative=N"):
 *   plain           contiguous MPI_INT, MPI_SUM where there is an op, every root tried
 *   inplace         the same with MPI_IN_PLACE where the collective allows it
 *   noncontig       a datatype with gaps (vector of ints, stride 2), non-reductions only
 *   noncommutative  a user op declared non-commutative (keeps the left operand), reductions
 * Exit status 0 when every result is right; otherwise "FAIL ..." and MPI_Abort.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PLAIN, INPLACE, NONCONTIG, NONCOMM, KINDS };
static const char *const kind_names[KINDS] = {"plain", "inplace", "noncontig", "noncommutative"};
static const int counts[] = {1, 3, 1000};
#define NCOUNTS ((int)(sizeof counts / sizeof counts[0]))
#define MAXN 1000

static int rank, size;
static long calls[KINDS];
static MPI_Datatype vec;  /* one "element" = 2 ints, the second is a gap */
static MPI_Op keep_left;  /* non-commutative: a o b = a */
static int check_tail;    /* -t */

static void fail(const char *coll, const char *what, int n, int root, int i, long got, long want)
{
    fprintf(stderr, "FAIL %s %s rank=%d n=%d root=%d index=%d got=%ld want=%ld\n", coll, what,
            rank, n, root, i, got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void check_rc(const char *coll, int rc)
{
    if (rc != MPI_SUCCESS)
        fail(coll, "return code", 0, 0, 0, rc, MPI_SUCCESS);
}

static int *ints(size_t n)
{
    int *p = malloc((n ? n : 1) * sizeof(int));
    if (p == NULL) {
        fprintf(stderr, "FAIL out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return p;
}

/* The value rank r contributes at position i. */
static int val(int r, int i) { return r * 1000 + i % 977 + 1; }
static int sum_upto(int last, int i) /* sum of val(r, i) for r = 0..last */
{
    int s = 0;
    for (int r = 0; r <= last; r++)
        s += val(r, i);
    return s;
}

static void keep_left_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in; (void)inout; (void)len; (void)type;
    /* inout = in o inout with `in` the lower ranks' partial result: keep `in`. */
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* ---- Allgather ---------------------------------------------------------------------------- */
static void t_allgather(void)
{
    int *r = ints((size_t)size * MAXN * 2), *s = ints(MAXN * 2);
    for (int kind = PLAIN; kind <= NONCONTIG; kind++)
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c], stride = kind == NONCONTIG ? 2 : 1;
            MPI_Datatype t = kind == NONCONTIG ? vec : MPI_INT;
            for (int i = 0; i < n * stride; i++) s[i] = val(rank, i / stride);
            for (int i = 0; i < size * n * stride; i++) r[i] = -1;
            if (kind == INPLACE)
                for (int i = 0; i < n; i++) r[rank * n + i] = val(rank, i);
            check_rc("allgather", MPI_Allgather(kind == INPLACE ? MPI_IN_PLACE : s, n, t, r, n, t,
                                                MPI_COMM_WORLD));
            calls[kind]++;
            for (int q = 0; q < size; q++)
                for (int i = 0; i < n; i++) {
                    int got = r[(q * n + i) * stride];
                    if (got != val(q, i)) fail("allgather", kind_names[kind], n, -1, i, got, val(q, i));
                    if (stride == 2 && r[(q * n + i) * 2 + 1] != -1)
                        fail("allgather", "gap overwritten", n, -1, i, r[(q * n + i) * 2 + 1], -1);
                }
        }
    free(r); free(s);
}

/* ---- Alltoall ----------------------------------------------------------------------------- */
static int a2a(int from, int to, int i) { return from * 100000 + to * 1000 + i % 997; }
static void t_alltoall(void)
{
    int *r = ints((size_t)size * MAXN * 2), *s = ints((size_t)size * MAXN * 2);
    for (int kind = PLAIN; kind <= NONCONTIG; kind++)
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c], stride = kind == NONCONTIG ? 2 : 1;
            MPI_Datatype t = kind == NONCONTIG ? vec : MPI_INT;
            int *in = kind == INPLACE ? r : s;
            for (int i = 0; i < size * n * stride; i++) { s[i] = -2; r[i] = -1; }
            for (int q = 0; q < size; q++)
                for (int i = 0; i < n; i++) in[(q * n + i) * stride] = a2a(rank, q, i);
            check_rc("alltoall", MPI_Alltoall(kind == INPLACE ? MPI_IN_PLACE : s, n, t, r, n, t,
                                              MPI_COMM_WORLD));
            calls[kind]++;
            for (int q = 0; q < size; q++)
                for (int i = 0; i < n; i++)
                    if (r[(q * n + i) * stride] != a2a(q, rank, i))
                        fail("alltoall", kind_names[kind], n, -1, i, r[(q * n + i) * stride], a2a(q, rank, i));
        }
    free(r); free(s);
}

/* ---- Bcast -------------------------------------------------------------------------------- */
static void t_bcast(void)
{
    int *b = ints(MAXN * 2);
    for (int kind = PLAIN; kind <= NONCONTIG; kind += 2)   /* no in-place form */
        for (int root = 0; root < size; root += size > 1 ? size - 1 : 1)
            for (int c = 0; c < NCOUNTS; c++) {
                int n = counts[c], stride = kind == NONCONTIG ? 2 : 1;
                for (int i = 0; i < n * stride; i++)
                    b[i] = rank == root ? (i % stride ? -7 : val(root, i / stride)) : -1;
                check_rc("bcast", MPI_Bcast(b, n, kind == NONCONTIG ? vec : MPI_INT, root, MPI_COMM_WORLD));
                calls[kind]++;
                for (int i = 0; i < n; i++)
                    if (b[i * stride] != val(root, i)) fail("bcast", kind_names[kind], n, root, i, b[i * stride], val(root, i));
                if (stride == 2 && rank != root)
                    for (int i = 0; i < n; i++)
                        if (b[2 * i + 1] != -1) fail("bcast", "gap overwritten", n, root, i, b[2 * i + 1], -1);
            }
    free(b);
}

/* ---- Gather ------------------------------------------------------------------------------- */
static void t_gather(void)
{
    int *r = ints((size_t)size * MAXN * 2), *s = ints(MAXN * 2);
    for (int kind = PLAIN; kind <= NONCONTIG; kind++)
        for (int root = 0; root < size; root += size > 1 ? size - 1 : 1)
            for (int c = 0; c < NCOUNTS; c++) {
                int n = counts[c], stride = kind == NONCONTIG ? 2 : 1;
                MPI_Datatype t = kind == NONCONTIG ? vec : MPI_INT;
                for (int i = 0; i < n * stride; i++) s[i] = val(rank, i / stride);
                for (int i = 0; i < size * n * stride; i++) r[i] = -1;
                int in_place = kind == INPLACE && rank == root;
                if (in_place)
                    for (int i = 0; i < n; i++) r[root * n + i] = val(root, i);
                check_rc("gather", MPI_Gather(in_place ? MPI_IN_PLACE : s, n, t, r, n, t, root, MPI_COMM_WORLD));
                calls[kind]++;
                if (rank == root)
                    for (int q = 0; q < size; q++)
                        for (int i = 0; i < n; i++)
                            if (r[(q * n + i) * stride] != val(q, i))
                                fail("gather", kind_names[kind], n, root, i, r[(q * n + i) * stride], val(q, i));
            }
    free(r); free(s);
}

/* ---- Scatter ------------------------------------------------------------------------------ */
static void t_scatter(void)
{
    int *r = ints(MAXN * 2), *s = ints((size_t)size * MAXN * 2);
    for (int kind = PLAIN; kind <= NONCONTIG; kind++)
        for (int root = 0; root < size; root += size > 1 ? size - 1 : 1)
            for (int c = 0; c < NCOUNTS; c++) {
                int n = counts[c], stride = kind == NONCONTIG ? 2 : 1;
                MPI_Datatype t = kind == NONCONTIG ? vec : MPI_INT;
                for (int q = 0; q < size; q++)
                    for (int i = 0; i < n * stride; i++) s[q * n * stride + i] = val(q, i / stride);
                for (int i = 0; i < n * stride; i++) r[i] = -1;
                int in_place = kind == INPLACE && rank == root;
                check_rc("scatter", MPI_Scatter(s, n, t, in_place ? MPI_IN_PLACE : r, n, t, root, MPI_COMM_WORLD));
                calls[kind]++;
                const int *mine = in_place ? s + (size_t)root * n * stride : r;
                for (int i = 0; i < n; i++)
                    if (mine[i * stride] != val(rank, i))
                        fail("scatter", kind_names[kind], n, root, i, mine[i * stride], val(rank, i));
            }
    free(r); free(s);
}

/* ---- Reductions --------------------------------------------------------------------------- */
/* Expected element i of a reduction over ranks 0..last with the kind's op. */
static int reduced(int kind, int last, int i)
{
    return kind == NONCOMM ? val(0, i) : sum_upto(last, i);
}

static void t_allreduce(void)
{
    int *r = ints(MAXN), *s = ints(MAXN);
    for (int kind = PLAIN; kind < KINDS; kind++) {
        if (kind == NONCONTIG) continue;
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            for (int i = 0; i < n; i++) { s[i] = val(rank, i); r[i] = kind == INPLACE ? s[i] : -1; }
            check_rc("allreduce", MPI_Allreduce(kind == INPLACE ? MPI_IN_PLACE : s, r, n, MPI_INT,
                                                kind == NONCOMM ? keep_left : MPI_SUM, MPI_COMM_WORLD));
            calls[kind]++;
            for (int i = 0; i < n; i++)
                if (r[i] != reduced(kind, size - 1, i)) fail("allreduce", kind_names[kind], n, -1, i, r[i], reduced(kind, size - 1, i));
        }
    }
    free(r); free(s);
}

static void t_reduce(void)
{
    int *r = ints(MAXN), *s = ints(MAXN);
    for (int kind = PLAIN; kind < KINDS; kind++) {
        if (kind == NONCONTIG) continue;
        for (int root = 0; root < size; root += size > 1 ? size - 1 : 1)
            for (int c = 0; c < NCOUNTS; c++) {
                int n = counts[c];
                int in_place = kind == INPLACE && rank == root;
                for (int i = 0; i < n; i++) { s[i] = val(rank, i); r[i] = in_place ? s[i] : -1; }
                check_rc("reduce", MPI_Reduce(in_place ? MPI_IN_PLACE : s, r, n, MPI_INT,
                                              kind == NONCOMM ? keep_left : MPI_SUM, root, MPI_COMM_WORLD));
                calls[kind]++;
                if (rank == root)
                    for (int i = 0; i < n; i++)
                        if (r[i] != reduced(kind, size - 1, i)) fail("reduce", kind_names[kind], n, root, i, r[i], reduced(kind, size - 1, i));
            }
    }
    free(r); free(s);
}

static void t_scan(void)
{
    int *r = ints(MAXN), *s = ints(MAXN);
    for (int kind = PLAIN; kind < KINDS; kind++) {
        if (kind == NONCONTIG) continue;
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            for (int i = 0; i < n; i++) { s[i] = val(rank, i); r[i] = kind == INPLACE ? s[i] : -1; }
            check_rc("scan", MPI_Scan(kind == INPLACE ? MPI_IN_PLACE : s, r, n, MPI_INT,
                                      kind == NONCOMM ? keep_left : MPI_SUM, MPI_COMM_WORLD));
            calls[kind]++;
            for (int i = 0; i < n; i++)
                if (r[i] != reduced(kind, rank, i)) fail("scan", kind_names[kind], n, -1, i, r[i], reduced(kind, rank, i));
        }
    }
    free(r); free(s);
}

/* Element j of the full reduced vector (block of rank q starts at offset(q)). */
static void t_reduce_scatter_block(void)
{
    int *r = ints((size_t)size * MAXN), *s = ints((size_t)size * MAXN);
    for (int kind = PLAIN; kind < KINDS; kind++) {
        if (kind == NONCONTIG) continue;
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            int *in = kind == INPLACE ? r : s;
            for (int j = 0; j < size * n; j++) { in[j] = val(rank, j); if (kind != INPLACE) r[j] = -1; }
            check_rc("reduce_scatter_block",
                     MPI_Reduce_scatter_block(kind == INPLACE ? MPI_IN_PLACE : s, r, n, MPI_INT,
                                              kind == NONCOMM ? keep_left : MPI_SUM, MPI_COMM_WORLD));
            calls[kind]++;
            for (int i = 0; i < n; i++)
                if (r[i] != reduced(kind, size - 1, rank * n + i))
                    fail("reduce_scatter_block", kind_names[kind], n, -1, i, r[i], reduced(kind, size - 1, rank * n + i));
            for (int j = n; check_tail && kind == INPLACE && j < size * n; j++)
                if (r[j] != val(rank, j))
                    fail("reduce_scatter_block", "in-place tail overwritten", n, -1, j, r[j], val(rank, j));
        }
    }
    free(r); free(s);
}

static void t_reduce_scatter(void)
{
    int *r = ints((size_t)size * (MAXN + size)), *s = ints((size_t)size * (MAXN + size));
    int *rc = ints((size_t)size);
    for (int kind = PLAIN; kind < KINDS; kind++) {
        if (kind == NONCONTIG) continue;
        for (int c = 0; c < NCOUNTS; c++) {
            int total = 0, mine = 0;
            for (int q = 0; q < size; q++) {   /* uneven blocks, rank 0's the largest */
                rc[q] = counts[c] + (size - 1 - q);
                if (q < rank) mine += rc[q];
                total += rc[q];
            }
            int *in = kind == INPLACE ? r : s;
            for (int j = 0; j < total; j++) { in[j] = val(rank, j); if (kind != INPLACE) r[j] = -1; }
            check_rc("reduce_scatter",
                     MPI_Reduce_scatter(kind == INPLACE ? MPI_IN_PLACE : s, r, rc, MPI_INT,
                                        kind == NONCOMM ? keep_left : MPI_SUM, MPI_COMM_WORLD));
            calls[kind]++;
            for (int i = 0; i < rc[rank]; i++)
                if (r[i] != reduced(kind, size - 1, mine + i))
                    fail("reduce_scatter", kind_names[kind], counts[c], -1, i, r[i], reduced(kind, size - 1, mine + i));
            for (int j = rc[rank]; check_tail && kind == INPLACE && j < total; j++)
                if (r[j] != val(rank, j))
                    fail("reduce_scatter", "in-place tail overwritten", counts[c], -1, j, r[j], val(rank, j));
        }
    }
    free(r); free(s); free(rc);
}

static const struct { const char *name; void (*run)(void); } tests[] = {
    {"allgather", t_allgather}, {"allreduce", t_allreduce}, {"alltoall", t_alltoall},
    {"bcast", t_bcast}, {"gather", t_gather}, {"reduce", t_reduce},
    {"reduce_scatter_block", t_reduce_scatter_block}, {"reduce_scatter", t_reduce_scatter},
    {"scan", t_scan}, {"scatter", t_scatter},
};
#define NTESTS ((int)(sizeof tests / sizeof tests[0]))

static void run(int t, int repeat)
{
    memset(calls, 0, sizeof calls);
    for (int k = 0; k < repeat; k++)
        tests[t].run();
    if (rank == 0)
        printf("calls %s plain=%ld inplace=%ld noncontig=%ld noncommutative=%ld\n", tests[t].name,
               calls[PLAIN], calls[INPLACE], calls[NONCONTIG], calls[NONCOMM]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 2 * (MPI_Aint)sizeof(int), &vec);
    MPI_Type_commit(&vec);
    MPI_Op_create(keep_left_fn, 0, &keep_left);

    int repeat = 1, first = 1, any = 0;
    if (argc > first + 1 && strcmp(argv[first], "-r") == 0) {
        repeat = atoi(argv[first + 1]);
        first += 2;
    }
    if (argc > first && strcmp(argv[first], "-t") == 0) {
        check_tail = 1;
        first++;
    }
    for (int a = first; a < argc; a++) {
        int t = 0;
        while (t < NTESTS && strcmp(tests[t].name, argv[a]) != 0) t++;
        if (t == NTESTS) {
            if (rank == 0) fprintf(stderr, "unknown collective %s\n", argv[a]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        run(t, repeat);
        any = 1;
    }
    for (int t = 0; !any && t < NTESTS; t++)
        run(t, repeat);
    if (rank == 0)
        printf("ok %d ranks\n", size);
    MPI_Op_free(&keep_left);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return 0;
}

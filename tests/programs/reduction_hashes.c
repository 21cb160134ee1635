/* Issue 37's program: reductions whose results depend on how an algorithm combines partial
 * results, on data that overflow (integers, every bit pattern) or round (floats of many
 * magnitudes). Each round makes one call of allreduce, reduce, reduce_scatter,
 * reduce_scatter_block and allgather with a datatype among uint8, int8, unsigned char, int and
 * float, a count from 1 to 70,000 (log-uniform), separate or in-place buffers and a root, all
 * drawn from the seed. Every rank hashes each call's result; rank 0 prints one line per call
 * (`call <index> <collective> <datatype> <count> <in_place> <hash>`) and every rank a summary
 * (`rank <r> hash <hash of all its calls> calls <n>`).
 *
 * Usage: reduction_hashes [rounds (240)] [data seed (1)] */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COUNT 70000

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

typedef struct { const char *name; MPI_Datatype type; int size; int is_float; } dtype;

/* Element i of rank r's input in round k: every bit pattern for integers; for floats a mantissa
 * in [-1, 1) scaled by 2^-12..2^12, so any two summation orders round differently. */
static void fill(unsigned char *buf, const dtype *t, int64_t n, uint64_t seed, int r, int k)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = mix(seed ^ mix(((uint64_t)k << 40) ^ ((uint64_t)r << 24) ^ (uint64_t)i));
        if (t->is_float) {
            float v = ldexpf((float)(h >> 40) / 16777216.0f * 2.0f - 1.0f, (int)(h % 25) - 12);
            memcpy(buf + 4 * i, &v, 4);
        } else {
            memcpy(buf + (int64_t)t->size * i, &h, (size_t)t->size);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int rounds = argc > 1 ? atoi(argv[1]) : 240;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    const dtype types[] = {{"uint8", MPI_UINT8_T, 1, 0}, {"int8", MPI_INT8_T, 1, 0},
                           {"unsigned_char", MPI_UNSIGNED_CHAR, 1, 0}, {"int", MPI_INT, 4, 0},
                           {"float", MPI_FLOAT, 4, 1}};
    const char *colls[] = {"allreduce", "reduce", "reduce_scatter", "reduce_scatter_block",
                           "allgather"};
    size_t cap = (size_t)(MAX_COUNT + 2) * 4 * (size_t)p;
    unsigned char *send = malloc(cap), *recv = malloc(cap);
    int *counts = malloc(sizeof(int) * (size_t)p);
    uint64_t all = 14695981039346656037ull;
    int calls = 0;
    for (int k = 0; k < rounds; k++)
        for (int c = 0; c < 5; c++) {
            uint64_t d = mix(seed * 1000003ull + (uint64_t)(k * 5 + c));
            const dtype *t = &types[d % 5];
            int count = (int)exp(log((double)MAX_COUNT) * (double)((d >> 8) % 10000) / 9999.0);
            int in_place = (int)(d >> 24) & 1, root = (int)((d >> 32) % (uint64_t)p);
            int64_t n = count, out_begin = 0, out_n = count;   /* elements */
            for (int i = 0; i < p; i++) counts[i] = count + 1 - (i % 3);
            int64_t total = 0, below = 0;
            for (int i = 0; i < p; i++) {
                if (i < rank) below += counts[i];
                total += counts[i];
            }
            void *sbuf = send;
            memset(recv, 0x5a, cap);
            switch (c) {
            case 0:
                fill(in_place ? recv : send, t, n, seed, rank, k);
                if (in_place) sbuf = MPI_IN_PLACE;
                MPI_Allreduce(sbuf, recv, count, t->type, MPI_SUM, MPI_COMM_WORLD);
                break;
            case 1:
                fill(in_place && rank == root ? recv : send, t, n, seed, rank, k);
                if (in_place && rank == root) sbuf = MPI_IN_PLACE;
                MPI_Reduce(sbuf, recv, count, t->type, MPI_SUM, root, MPI_COMM_WORLD);
                if (rank != root) out_n = 0;
                break;
            case 2:
                fill(in_place ? recv : send, t, total, seed, rank, k);
                if (in_place) sbuf = MPI_IN_PLACE;
                MPI_Reduce_scatter(sbuf, recv, counts, t->type, MPI_SUM, MPI_COMM_WORLD);
                out_n = counts[rank];
                (void)below;
                break;
            case 3:
                fill(in_place ? recv : send, t, (int64_t)p * n, seed, rank, k);
                if (in_place) sbuf = MPI_IN_PLACE;
                MPI_Reduce_scatter_block(sbuf, recv, count, t->type, MPI_SUM, MPI_COMM_WORLD);
                break;
            default:
                fill(in_place ? recv + (int64_t)rank * n * t->size : send, t, n, seed, rank, k);
                if (in_place) sbuf = MPI_IN_PLACE;
                MPI_Allgather(sbuf, in_place ? 0 : count, in_place ? MPI_DATATYPE_NULL : t->type,
                              recv, count, t->type, MPI_COMM_WORLD);
                out_n = (int64_t)p * n;
                break;
            }
            uint64_t h = fnv(14695981039346656037ull, recv + out_begin * t->size,
                             (size_t)(out_n * t->size));
            all = fnv(all, (const unsigned char *)&h, sizeof h);
            calls++;
            if (rank == 0)
                printf("call %d %s %s %d %d %016llx\n", k * 5 + c, colls[c], t->name, count,
                       in_place, (unsigned long long)h);
        }
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d hash %016llx calls %d\n", rank, (unsigned long long)all, calls);
    free(send), free(recv), free(counts);
    MPI_Finalize();
    return 0;
}

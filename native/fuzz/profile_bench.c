/*
 * Cost of ct_profile_lookup: profiles with 1 to 65536 rules (one collective, one procs block),
 * random message sizes, best of 5 rounds of 10^7 lookups. Builds with plain gcc, no MPI:
 *
 *   python3 native/fuzz/gen_names.py OUT && gcc -std=c11 -O2 -Inative/include -IOUT \
 *       native/fuzz/profile_bench.c native/core/profile.c OUT/ct_catalog.c -o profile_bench
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ct_catalog.h"
#include "ct_profile.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ct_profile *make(long rules)
{
    size_t cap = 64 + (size_t)rules * 64, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "colltune-profile 1\ncollective allreduce\nprocs 4 4\n");
    for (long r = 0; r < rules; r++)
        len += (size_t)snprintf(text + len, cap - len, "bytes %ld %ld allreduce_as_reduce_bcast\n",
                                16 * r, 16 * r + 7);
    len += (size_t)snprintf(text + len, cap - len, "end\n");
    char err[256];
    ct_profile *p = NULL;
    if (ct_profile_parse(text, len, "bench", &p, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    free(text);
    return p;
}

int main(void)
{
    const long sizes[] = {1, 16, 256, 4096, 65536};
    enum { N = 10000000, KEYS = 4096 };
    static int64_t keys[KEYS];
    printf("rules  ns/lookup (best of 5 x 10^7)  hits\n");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        ct_profile *p = make(sizes[s]);
        uint64_t x = 88172645463325252ull;
        for (int i = 0; i < KEYS; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            keys[i] = (int64_t)(x % (uint64_t)(16 * sizes[s]));
        }
        double best = 1e30;
        long hits = 0;
        for (int round = 0; round < 5; round++) {
            hits = 0;
            double t0 = now();
            for (int i = 0; i < N; i++)
                hits += ct_profile_lookup(p, CT_COLL_ALLREDUCE, 4, keys[i & (KEYS - 1)]) >= 0;
            double t = (now() - t0) / N * 1e9;
            if (t < best)
                best = t;
        }
        printf("%5ld  %6.1f  %ld\n", sizes[s], best, hits);
        ct_profile_free(p);
    }
    return 0;
}

/*
 * Profiling mode: the call path's clock (ct_profrun.h), started at MPI_Init.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "ct_profrun.h"

/* The clock of the call path (ct_profrun_ticks): the TSC where the kernel itself trusts it for
 * CLOCK_MONOTONIC (clocksource "tsc": invariant and synchronised across cores), ~7 ns a read
 * against ~22 ns for clock_gettime here; on ExaML's 1.36 M calls per rank, 2 reads per call on
 * both ranks of every Reduce/Bcast round trip, that difference is ~1% of the run. Durations are
 * kept in ticks and converted at MPI_Finalize with the rate measured over the whole run. */
static int ct_tsc;
static uint64_t ct_tick_init;
CT_PROFRUN_HIDDEN uint64_t ct_profrun_ns_init;

uint64_t ct_profrun_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ct_profrun_ticks(void)
{
#if defined(__x86_64__)
    if (ct_tsc)
        return __rdtsc();
#endif
    return ct_profrun_ns();
}

double ct_profrun_ns_per_tick(void)
{
    if (!ct_tsc)
        return 1.0;
    uint64_t ticks = ct_profrun_ticks() - ct_tick_init, ns = ct_profrun_ns() - ct_profrun_ns_init;
    return ticks > 0 ? (double)ns / (double)ticks : 1.0;
}

static int ct_tsc_trusted(void)
{
#if defined(__x86_64__)
    char name[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f == NULL)
        return 0;
    int ok = fgets(name, sizeof name, f) != NULL && strcmp(name, "tsc\n") == 0;
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

void ct_profrun_clock_start(void)
{
    ct_tsc = ct_tsc_trusted();
    ct_profrun_ns_init = ct_profrun_ns();
    ct_tick_init = ct_profrun_ticks();
}

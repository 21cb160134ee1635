/* Phase clock for plain vs preloaded runs: the same shim in every mode, first in LD_PRELOAD. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

enum { CTOR, INIT0, INIT1, FIN0, FIN1, DTOR, MARKS };
static const char *names[MARKS] = {"ctor", "init0", "init1", "fin0", "fin1", "dtor"};
static double t[MARKS], ut[MARKS], st[MARKS];
static long flt[MARKS], vcs[MARKS], ivcs[MARKS];

static void mark(int m)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    t[m] = ts.tv_sec + ts.tv_nsec * 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    ut[m] = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
    st[m] = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    flt[m] = ru.ru_minflt;
    vcs[m] = ru.ru_nvcsw;
    ivcs[m] = ru.ru_nivcsw;
}

__attribute__((constructor)) static void ctor(void) { mark(CTOR); }

int MPI_Init(int *argc, char ***argv)
{
    mark(INIT0);
    int (*next)(int *, char ***) = (int (*)(int *, char ***))dlsym(RTLD_NEXT, "MPI_Init");
    int rc = next(argc, argv);
    mark(INIT1);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int req, int *prov)
{
    mark(INIT0);
    int (*next)(int *, char ***, int, int *) = (int (*)(int *, char ***, int, int *))dlsym(RTLD_NEXT, "MPI_Init_thread");
    int rc = next(argc, argv, req, prov);
    mark(INIT1);
    return rc;
}

int MPI_Finalize(void)
{
    mark(FIN0);
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
    int rc = next();
    mark(FIN1);
    return rc;
}

__attribute__((destructor)) static void dtor(void)
{
    mark(DTOR);
    const char *dir = getenv("PHASE_OUT"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (dir == NULL || rank == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", dir, rank);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    for (int m = 0; m < MARKS; m++)
        fprintf(f, "%s %.6f %.6f %.6f %ld %ld %ld\n", names[m], t[m], ut[m], st[m], flt[m], vcs[m], ivcs[m]);
    fclose(f);
}

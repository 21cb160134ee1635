/*
 * What libcolltune's debug queries say before and after some calls (tests/test_learn_runtime.py).
 * Rank 0 prints "route COLLECTIVE NAME" for every collective after MPI_Init (the query
 * colltune_route_name, found with dlsym: no lines without libcolltune), then "recording N"
 * before and after N_CALLS 1-int broadcasts (colltune_learn_recording), each checked.
 *
 *   ct_routes [N_CALLS]   (default 12)
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, calls = argc > 1 ? atoi(argv[1]) : 12, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *(*route)(int) = (const char *(*)(int))dlsym(RTLD_DEFAULT, "colltune_route_name");
    const char *(*name)(int) = (const char *(*)(int))dlsym(RTLD_DEFAULT, "colltune_collective_name");
    int (*recording)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "colltune_learn_recording");
    if (rank == 0) {
        for (int c = 0; route != NULL && route(c) != NULL; c++)
            printf("route %s %s\n", name(c), route(c));
        printf("recording %d\n", recording ? recording() : -1);
    }
    for (int i = 0; i < calls; i++) {
        int v = rank == 0 ? 1000 + i : -1;
        MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
        bad |= v != 1000 + i;
    }
    if (rank == 0)
        printf("recording %d\n", recording ? recording() : -1);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %d calls\n", bad ? "FAIL" : "ok", calls);
    MPI_Finalize();
    return bad;
}

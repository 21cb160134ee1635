/* Does a communicator made at MPI_Init leave Open MPI's libnbc progress function registered for
 * the rest of the run? (README.md, "seventeenth round: what the preload alone costs".) MPI_Init,
 * then per argv[2] nothing (none), MPI_Comm_dup (dup) or MPI_Comm_create_group over
 * MPI_COMM_WORLD's group (group) and one Allreduce on it, then argv[1] MPI_Allreduce of one
 * double on MPI_COMM_WORLD; rank 0 prints the result. Count ompi_coll_libnbc_progress's calls
 * under callgrind (fixed_costs.sh's rank.sh, cg_objects.py --match libnbc_progress):
 *   mpicc.openmpi -O2 -g -o comm_progress benchmarks/advise/comm_progress.c
 *   mpirun.openmpi -np 2 ./rank.sh ./comm_progress 2000 dup */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = atoi(argv[1]), rank;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Group g;
    if (strcmp(argv[2], "dup") == 0)
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    else if (strcmp(argv[2], "group") == 0) {
        MPI_Comm_group(MPI_COMM_WORLD, &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, 0, &c);
        MPI_Group_free(&g);
    }
    if (c != MPI_COMM_NULL) {
        unsigned long long v = 1;
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, c);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank + 1, s = 0;
    for (int i = 0; i < n; i++) {
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = s * 0.5;
    }
    if (rank == 0)
        printf("result %.17g\n", x);
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}

/* The profiling run's fixed costs (benchmarks/advise/fixed_costs.sh, pass_cost.sh): MPI_Init, N
 * MPI_Allreduce of one double on MPI_COMM_WORLD, MPI_Finalize; rank 0 prints the result (equal in
 * every mode). A second argument makes a communicator first and reduces once on it, to see
 * whether one made at MPI_Init leaves Open MPI's libnbc progress function registered for the rest
 * of the run (README.md, "seventeenth round: what the preload alone costs"): `dup`
 * (MPI_Comm_dup) or `group` (MPI_Comm_create_group over MPI_COMM_WORLD's group); `none`, the
 * default, makes none. Count ompi_coll_libnbc_progress's calls under callgrind (fixed_costs.sh's
 * rank.sh, cg_objects.py --match libnbc_progress):
 *   mpicc.openmpi -O2 -g -o fixed_allreduce benchmarks/advise/fixed_allreduce.c
 *   mpirun.openmpi -np 2 ./rank.sh ./fixed_allreduce 2000 dup */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_Comm made_first(const char *how)
{
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Group g;
    if (strcmp(how, "dup") == 0)
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    else if (strcmp(how, "group") == 0) {
        MPI_Comm_group(MPI_COMM_WORLD, &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, 0, &c);
        MPI_Group_free(&g);
    } else if (strcmp(how, "none") != 0) {
        fprintf(stderr, "fixed_allreduce: '%s' is none of none, dup, group\n", how);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (c != MPI_COMM_NULL) {
        unsigned long long v = 1;
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, c);
    }
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 20000, rank;
    MPI_Comm c = made_first(argc > 2 ? argv[2] : "none");
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

/* The profiling run's fixed costs (benchmarks/advise/fixed_costs.sh): MPI_Init, N MPI_Allreduce
 * of one double, MPI_Finalize; rank 0 prints the result (equal in every mode). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 20000, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank + 1, s = 0;
    for (int i = 0; i < n; i++) {
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = s * 0.5;
    }
    if (rank == 0)
        printf("result %.17g\n", x);
    MPI_Finalize();
    return 0;
}

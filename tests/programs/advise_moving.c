/* Reduce + Bcast pairs whose buffers move from call to call, as ExaML's do (tests/
 * test_advise_patterns.py): the profiling mode's memo of a site's last call hits with other
 * buffers, whose condition is checked on every call. 10 pairs whose broadcast sends the reduce's
 * result at the root (counted) and 10 that send another buffer there (only the root can tell:
 * the minimum over ranks is 10). An MPI_Allreduce separates the pairs. */
#include <mpi.h>

int main(int argc, char **argv)
{
    static double x[4], ring[20][4], other[4], s;
    MPI_Init(&argc, &argv);
    for (int i = 0; i < 20; i++) {
        MPI_Reduce(x, ring[i], 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Bcast(i % 2 ? other : ring[i], 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Allreduce(x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

/* Many small collectives (tests/test_advise_profile.py, the sampling budget): N MPI_Allreduce of
 * 8 bytes (N = argv[1], default 1000) from one site. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 1000;
    double x = 1.0, y;
    for (long i = 0; i < n; i++)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

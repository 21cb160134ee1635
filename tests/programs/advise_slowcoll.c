/* Plants a collective point: 300 MPI_Bcast of 4096 bytes from one call site and nothing else,
 * so collectives are most of the run. */
#include <mpi.h>
#include <stdlib.h>

__attribute__((noinline)) static void exchange(char *buf)
{
    for (int i = 0; i < 300; i++)
        MPI_Bcast(buf, 4096, MPI_CHAR, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    char *buf = calloc(4096, 1);
    exchange(buf);
    free(buf);
    MPI_Finalize();
    return 0;
}

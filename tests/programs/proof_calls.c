/* The two library bugs of issue 22 as an application meets them: 8-bit sums (Open MPI 5.0's
 * op/avx saturates, and its algorithms disagree) and in-place allgather (sparbit loses blocks).
 * Prints one line per rank: a hash of every 8-bit sum result and the in-place allgather errors. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint8_t in[300], out[300];
    uint64_t hash = 14695981039346656037ull;
    for (int it = 0; it < 200; it++) {
        for (int i = 0; i < 300; i++) in[i] = (uint8_t)((rank + 1) * 97 + i * 31 + it);
        MPI_Allreduce(in, out, 300, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 300; i++) hash = (hash ^ out[i]) * 1099511628211ull;
    }
    int errors = 0, block = 7, all[7 * 64];
    for (int it = 0; it < 50 && size <= 64; it++) {
        for (int i = 0; i < block * size; i++) all[i] = -1;
        for (int i = 0; i < block; i++) all[rank * block + i] = rank * 1000 + i + it;
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, block, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < block; i++) errors += all[r * block + i] != r * 1000 + i + it;
        int mine[7];
        for (int i = 0; i < block; i++) mine[i] = rank * 1000 + i + it;
        MPI_Allgather(mine, block, MPI_INT, all, block, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < block; i++) errors += all[r * block + i] != r * 1000 + i + it;
    }
    printf("rank %d hash %016llx errors %d\n", rank, (unsigned long long)hash, errors);
    MPI_Finalize();
    return 0;
}

/* A layer function whose stack is realigned (a 64-byte aligned local and a variable-length array):
 * GCC keeps its CFA through a DRAP register, described by the DWARF expressions
 * `DW_CFA_def_cfa_expression: DW_OP_breg6 N; DW_OP_deref` and `DW_CFA_expression: rbp: DW_OP_breg6 0`
 * (as Debian's AVX2 build of ExaML does everywhere). Two application functions reach MPI through it,
 * so the two chains differ only above the realigned frame: the walk must read through it
 * (profwalk.c) and agree with libgcc's unwind. Prints the sum. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) double realigned_sum(double x, int n)
{
    double v[8] __attribute__((aligned(64)));
    double scratch[n];
    memset(scratch, 0, sizeof scratch);
    for (int i = 0; i < 8; i++)
        v[i] = x + i + scratch[i % n];
    double out = 0;
    MPI_Allreduce(v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
}

__attribute__((noinline)) double pressure(int i)
{
    return realigned_sum(i, 4) + 1;   /* CALL_P */
}

__attribute__((noinline)) double velocity(int i)
{
    return realigned_sum(2 * i, 3) + 2;   /* CALL_V */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double s = 0;
    for (int i = 0; i < 50; i++)
        s += pressure(i) + velocity(i);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("total %g\n", s);
    MPI_Finalize();
    return 0;
}

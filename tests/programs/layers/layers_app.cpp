// An application reaching MPI only through its layer (libminipstream.so), with known chains
// (tests/test_advise_layers.py): per rank
//   PCG::solve      line A: 10 x gSum   (the residual)      -> reduce<sumOp> -> MPI_Allreduce
//                   line B: 10 x gSum   (the norm), directly after line A's: a pair of small
//                           reductions back to back at two application lines
//   Smoother::sweep line C:  7 x gMax                        -> reduce<maxOp> -> MPI_Allreduce
//   Residual::norm  line D:  4 x reduce<sumOp> directly
#include <cstdio>
#include <mpi.h>

#include "minipstream.hpp"

namespace solver {
struct PCG {
    __attribute__((noinline)) double solve(int iters)
    {
        double r = 0, n = 0;
        for (int i = 0; i < iters; i++) {
            r += mini::gSum(1.0);  // LINE_A
            n += mini::gSum(2.0);  // LINE_B
        }
        return r + n;
    }
};

struct Smoother {
    __attribute__((noinline)) double sweep(int iters)
    {
        double m = 0;
        for (int i = 0; i < iters; i++)
            m += mini::gMax(i);  // LINE_C
        return m;
    }
};

__attribute__((noinline)) double norm(int iters)
{
    double s = 0;
    for (int i = 0; i < iters; i++) {
        double x = 3.0;
        mini::reduce(x, mini::sumOp<double>());  // LINE_D
        s += x;
    }
    return s;
}
}  // namespace solver

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double total = solver::PCG().solve(10) + solver::Smoother().sweep(7) + solver::norm(4);
    MPI_Finalize();
    if (rank == 0)
        std::printf("total %g\n", total);
    return 0;
}

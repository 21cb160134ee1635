#include "minipstream.hpp"

namespace mini {
template <class T> MPI_Op mpi_op(const sumOp<T> &) { return MPI_SUM; }
template <class T> MPI_Op mpi_op(const maxOp<T> &) { return MPI_MAX; }

template <class T, class Op> __attribute__((noinline)) void reduce(T &value, const Op &op, int tag, MPI_Comm comm)
{
    (void)tag;
    T in = value;
    MPI_Allreduce(&in, &value, 1, MPI_DOUBLE, mpi_op(op), comm);
}

template void reduce<double, sumOp<double>>(double &, const sumOp<double> &, int, MPI_Comm);
template void reduce<double, maxOp<double>>(double &, const maxOp<double> &, int, MPI_Comm);

__attribute__((noinline)) double gSum(double x)
{
    reduce(x, sumOp<double>());
    return x;
}

__attribute__((noinline)) double gMax(double x)
{
    reduce(x, maxOp<double>());
    return x;
}
}  // namespace mini

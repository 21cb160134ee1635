// A Pstream-like communication layer (tests/test_advise_layers.py): a reduce() template that
// calls MPI_Allreduce, and gSum/gMax helpers on top of it, compiled into a shared library.
#pragma once
#include <mpi.h>

namespace mini {
template <class T> struct sumOp {};
template <class T> struct maxOp {};

template <class T, class Op> void reduce(T &value, const Op &op, int tag = 1, MPI_Comm comm = MPI_COMM_WORLD);

double gSum(double x);
double gMax(double x);
}  // namespace mini

/*
 * `use mpi_f08` where its buffers are array descriptors (TS 29113): refused, and said so.
 *
 * The generated Fortran wrappers (ct_fortran_wrappers.c) define `mpi_x_f08_`, the binding of a
 * library whose mpi_f08 passes buffers as plain addresses (Debian's Open MPI 4.1 with gfortran:
 * ompi_info "subarrays-supported: no"). A library whose mpi_f08 passes descriptors names those
 * bindings `mpi_x_f08ts_` (MPICH, Open MPI built with TS 29113 support): translating a descriptor
 * into a C buffer and datatype is the library's business. Open MPI's bindings then call PMPI_*:
 * those calls reach the library unseen and unserved, and rank 0 says so at MPI_Init, once, when
 * the library has such bindings. An MPICH-family library's call the C MPI_* (objdump of MPICH
 * 4.0.2's libmpichfort: mpi_allreduce_f08ts_ calls MPI_Allreduce), so the C wrappers see and
 * serve them: nothing to say there (tests/test_fortran.py, MPICH's ct_f08.f90).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

#include "ct_runtime.h"

void ct_f08_check(int rank)
{
#if defined(COLLTUNE_ABI_FAMILY_OPENMPI)
    if (rank != 0 || dlsym(RTLD_DEFAULT, "mpi_allreduce_f08ts_") == NULL)
        return;
    ct_message("warning: this MPI library's mpi_f08 passes buffers as array descriptors "
               "(mpi_*_f08ts_, TS 29113): collectives called through `use mpi_f08` reach the "
               "library unseen and unserved by colltune; `use mpi` or mpif.h calls are seen");
#else
    (void)rank;
#endif
}

/*
 * Refuse to run inside an MPI library of the other ABI family.
 *
 * An interposer compiled against Open MPI's mpi.h treats MPI_Comm as a pointer to
 * ompi_communicator_t; under MPICH (where MPI_Comm is an int) the first collective would crash
 * or report "invalid communicator" far from the cause. The constructor runs when the library is
 * loaded, before main() and so before any MPI call, and looks for a symbol only the other family
 * defines.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#if defined(COLLTUNE_ABI_FAMILY_OPENMPI)
#define CT_BUILT_FOR "Open MPI"
#define CT_FOREIGN_SYMBOL "MPIR_Err_return_comm" /* MPICH and its derivatives (Intel MPI) */
#define CT_FOREIGN_NAME "an MPICH-family library (MPICH, Intel MPI, ...)"
#elif defined(COLLTUNE_ABI_FAMILY_MPICH)
#define CT_BUILT_FOR "the MPICH family"
#define CT_FOREIGN_SYMBOL "ompi_mpi_comm_world"  /* Open MPI's MPI_COMM_WORLD object */
#define CT_FOREIGN_NAME "Open MPI"
#elif defined(COLLTUNE_ABI_FAMILY_SMPI)
#define CT_BUILT_FOR "SimGrid SMPI"
#define CT_FOREIGN_SYMBOL "ompi_mpi_comm_world"  /* SMPI runs inside no real MPI library */
#define CT_FOREIGN_NAME "Open MPI"
#else
#error "compile with -DCOLLTUNE_ABI_FAMILY_OPENMPI, _MPICH or _SMPI"
#endif

__attribute__((constructor)) static void ct_abi_guard(void)
{
    if (dlsym(RTLD_DEFAULT, CT_FOREIGN_SYMBOL) == NULL)
        return;
    fprintf(stderr,
            "colltune: error: libcolltune was built for %s but this program runs %s; rebuild "
            "it for that library with `colltune mpi build --mpi <mpich|intel|openmpi|path to "
            "mpicc>` and launch with `colltune run --mpi ...` (process %ld exits now, before "
            "any MPI call)\n",
            CT_BUILT_FOR, CT_FOREIGN_NAME, (long)getpid());
    fflush(stderr);
    _exit(1);
}

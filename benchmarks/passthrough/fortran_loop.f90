! The loop of benchmarks/passthrough/fortran.py: N iterations of MPI_Allreduce (7 arguments),
! MPI_Alltoallv (10: its entry's arguments partly on the stack) and MPI_Iallreduce + MPI_Wait,
! through `use mpi`, on one rank.
program fortran_loop
  use mpi
  implicit none
  integer :: ierr, i, n, req
  integer :: counts(1), displs(1)
  double precision :: a, b, c(1), d(1)
  character(len=32) :: arg
  call get_command_argument(1, arg)
  read(arg, *) n
  call MPI_Init(ierr)
  a = 1.0d0
  c = 2.0d0
  counts = 1
  displs = 0
  do i = 1, n
    call MPI_Allreduce(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Alltoallv(c, counts, displs, MPI_DOUBLE_PRECISION, d, counts, displs, &
                       MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call MPI_Iallreduce(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  end do
  if (b /= 1.0d0 .or. d(1) /= 2.0d0) print *, 'wrong'
  call MPI_Finalize(ierr)
end program

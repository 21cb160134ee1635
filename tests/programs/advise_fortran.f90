! Known Fortran calls at known lines for colltune advise (tests/test_advise_where.py): the call
! sites must be these lines, not colltune's Fortran wrappers. 6 steps of MPI_Reduce to root 0 and
! MPI_Bcast of the reduce's result from root 0 (same buffer, count, datatype: one MPI_Allreduce
! would do), then 4 MPI_Allreduce of 32 bytes from the main program.
program advise_fortran
  use mpi
  implicit none
  integer :: ierr, rank, i
  double precision :: x(4), y(4)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = rank
  do i = 1, 6
    call step(x, y)
  end do
  do i = 1, 4
    call MPI_Allreduce(x, y, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  if (rank == 0) print '(a, f6.1)', 'sum ', y(1)
  call MPI_Finalize(ierr)
end program advise_fortran

subroutine step(a, b)
  use mpi
  implicit none
  double precision :: a(4), b(4)
  integer :: ierr
  call MPI_Reduce(a, b, 4, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(b, 4, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
end subroutine step

! A Fortran application with its own communication module (tests/test_advise_layers.py):
! comm_sum is called from energy and pressure, so the data make it a layer, and each site is
! the line that calls it. Per rank: energy 5 x (LINE_E), pressure 3 x (LINE_P).
module comm
  use mpi
  implicit none
contains
  subroutine comm_sum(x)
    double precision, intent(inout) :: x
    double precision :: y
    integer :: ierr
    call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    x = y
  end subroutine comm_sum
end module comm

subroutine energy(e)
  use comm
  double precision, intent(inout) :: e
  call comm_sum(e) ! LINE_E
end subroutine energy

subroutine pressure(p)
  use comm
  double precision, intent(inout) :: p
  call comm_sum(p) ! LINE_P
end subroutine pressure

program layers_fortran
  use mpi
  implicit none
  integer :: ierr, rank, i
  double precision :: e, p
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  e = 1.0d0
  p = 1.0d0
  do i = 1, 5
    call energy(e)
  end do
  do i = 1, 3
    call pressure(p)
  end do
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a, f8.1)', 'total ', e + p
end program layers_fortran

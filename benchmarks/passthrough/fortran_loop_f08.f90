! fortran_loop.f90 through `use mpi_f08`, the optional ierror omitted (the entries hand NULL on).
program fortran_loop_f08
  use mpi_f08
  implicit none
  integer :: i, n
  integer :: counts(1), displs(1)
  double precision :: a, b, c(1), d(1)
  type(MPI_Request) :: req
  character(len=32) :: arg
  call get_command_argument(1, arg)
  read(arg, *) n
  call MPI_Init()
  a = 1.0d0
  c = 2.0d0
  counts = 1
  displs = 0
  do i = 1, n
    call MPI_Allreduce(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Alltoallv(c, counts, displs, MPI_DOUBLE_PRECISION, d, counts, displs, &
                       MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
    call MPI_Iallreduce(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
  end do
  if (b /= 1.0d0 .or. d(1) /= 2.0d0) print *, 'wrong'
  call MPI_Finalize()
end program

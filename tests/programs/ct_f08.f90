! `use mpi_f08` (tests/test_fortran.py): Allreduce with and without MPI_IN_PLACE, Bcast, and an
! Iallreduce completed by MPI_Wait, the optional ierror omitted everywhere. Rank 0 prints the
! results; each is checked against its closed form (a wrong one prints "wrong").
program ct_f08
  use mpi_f08
  implicit none
  integer :: rank, p, s, r(4), b(2)
  type(MPI_Request) :: req
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, p)
  s = rank + 1
  call MPI_Allreduce(s, r, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (r(1) /= p * (p + 1) / 2) print '(a)', 'wrong allreduce'
  r(1) = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, r, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (r(1) /= p * (p + 1) / 2) print '(a)', 'wrong allreduce in place'
  b = -1
  if (rank == 0) b = (/ 7, 8 /)
  call MPI_Bcast(b, 2, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (b(2) /= 8) print '(a)', 'wrong bcast'
  r(1) = -1
  call MPI_Iallreduce(s, r, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (r(1) /= p * (p + 1) / 2) print '(a)', 'wrong iallreduce'
  if (rank == 0) print '(a, i0)', 'f08 done ', r(1)
  call MPI_Finalize()
end program ct_f08

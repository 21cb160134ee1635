! Fortran collectives through colltune's Fortran wrappers (tests/test_fortran.py).
! Prints one line per check: "check NAME SUMS" (exact integer checksums, compared between runs
! with and without colltune) and, on rank 0, "calls" lines with how many calls of each kind ran.
program ct_fortran
  use mpi
  implicit none
  integer :: ierr, rank, p, i, root
  integer, parameter :: n = 7
  integer :: a(n), b(n), big(n * 16), counts(16)
  double precision :: x(n), y(n)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  do i = 1, n
    a(i) = 1000 * rank + i
    x(i) = dble(rank + 1) * 2d0**(-i)  ! exact sums in any order: results comparable bit for bit
  end do

  call MPI_Allreduce(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('allreduce', b, n, ierr)
  b = a
  call MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call report('allreduce_in_place', b, n, ierr)
  call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('allreduce_double', int(y * 2d0**n), n, ierr)
  do root = 0, p - 1
    b = 0
    call MPI_Reduce(a, b, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    call report('reduce', b, n, ierr)
    b = a
    call MPI_Bcast(b, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call report('bcast', b, n, ierr)
  end do
  big = -1
  call MPI_Allgather(a, n, MPI_INTEGER, big, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call report('allgather', big, n * p, ierr)
  big = -1
  big(rank * n + 1 : rank * n + n) = a
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, big, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call report('allgather_in_place', big, n * p, ierr)
  big = -1
  call MPI_Gather(a, n, MPI_INTEGER, big, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank /= 0) big = 0
  call report('gather', big, n * p, ierr)
  b = 0
  call MPI_Scan(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('scan', b, n, ierr)
  do i = 1, p
    big((i - 1) * n + 1 : i * n) = a + i
    counts(i) = n
  end do
  b = 0
  call MPI_Reduce_scatter(big, b, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('reduce_scatter', b, n, ierr)
  b = 0
  call MPI_Reduce_scatter_block(big, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('reduce_scatter_block', b, n, ierr)
  call MPI_Finalize(ierr)

contains

  subroutine report(name, v, m, err)
    character(len=*), intent(in) :: name
    integer, intent(in) :: m, err
    integer, intent(in) :: v(m)
    integer :: s(2), j
    s(1) = 0
    s(2) = 0
    do j = 1, m
      s(1) = s(1) + v(j)
      s(2) = s(2) + j * v(j)
    end do
    if (err /= MPI_SUCCESS) s(1) = -999999
    write (*, '(a, 1x, a, 1x, i0, 1x, i0, 1x, i0)') 'check', name, rank, s(1), s(2)
  end subroutine report
end program ct_fortran

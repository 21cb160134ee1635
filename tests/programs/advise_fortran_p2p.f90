! Fortran MPI_Barrier and point-to-point calls at known lines for colltune advise
! (tests/test_advise_where.py): the sites must be these lines and the sizes exact. 3 MPI_Barrier
! each directly before an MPI_Allreduce (the barrier can go), 5 MPI_Send / MPI_Recv of 8000
! bytes, 2 rounds of MPI_Irecv + MPI_Isend of 800 bytes completed by MPI_Waitall, one
! MPI_Sendrecv of 80 bytes, one MPI_Isend of 8 bytes (eager) completed by MPI_Wait before the
! matching MPI_Recv; 2 ranks.
program advise_fortran_p2p
  use mpi
  implicit none
  integer :: ierr, rank, other, i, req(2), one, stat(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 2)
  double precision :: a(1000), b(1000), s
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  other = 1 - rank
  a = rank + 1
  do i = 1, 3
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(a, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  do i = 1, 5
    if (rank == 0) then
      call MPI_Send(a, 1000, MPI_DOUBLE_PRECISION, other, 7, MPI_COMM_WORLD, ierr)
    else
      call MPI_Recv(b, 1000, MPI_DOUBLE_PRECISION, other, 7, MPI_COMM_WORLD, stat, ierr)
    end if
  end do
  do i = 1, 2
    call MPI_Irecv(b, 100, MPI_DOUBLE_PRECISION, other, 8, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Isend(a, 100, MPI_DOUBLE_PRECISION, other, 8, MPI_COMM_WORLD, req(2), ierr)
    call MPI_Waitall(2, req, stats, ierr)
  end do
  call MPI_Sendrecv(a, 10, MPI_DOUBLE_PRECISION, other, 9, b, 10, MPI_DOUBLE_PRECISION, other, 9, MPI_COMM_WORLD, stat, ierr)
  call MPI_Isend(a, 1, MPI_DOUBLE_PRECISION, other, 10, MPI_COMM_WORLD, one, ierr)
  call wait_one(one)
  call MPI_Recv(b(2), 1, MPI_DOUBLE_PRECISION, other, 10, MPI_COMM_WORLD, stat, ierr)
  if (s == 3.0d0 .and. b(1) == other + 1 .and. b(2) == other + 1) then
    print '(a, i0)', 'ok ', rank
  else
    print '(a, i0)', 'FAIL ', rank
  end if
  call MPI_Finalize(ierr)
end program advise_fortran_p2p

! gfortran 12's line table puts the call of MPI_Wait on the line of the enclosing program or
! subroutine statement (MPI_Recv's, with the same status argument, is at its own line): the site
! is then at least this routine's own.
subroutine wait_one(request)
  use mpi
  implicit none
  integer :: request, ierr, st(MPI_STATUS_SIZE)
  call MPI_Wait(request, st, ierr)
end subroutine wait_one

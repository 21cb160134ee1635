! Every collective function of mpif.h / `use mpi` in Debian's Open MPI 4.1 (tests/test_fortran.py):
! blocking and nonblocking (MPI_I*, completed by each of the Wait/Test family in turn), the
! neighborhood ones on a periodic ring. (That library has no persistent collectives and Fortran
! has no large-count bindings outside mpi_f08.) Each result is checked against its closed form;
! a wrong one prints "wrong <name>" and aborts. Rank 0 prints "every: <n> functions".
module every_support
  use mpi
  implicit none
  include 'ct_every_want.inc'

  ! Completes req with the next of the Wait/Test family, in turn.
  subroutine complete(req)
    integer, intent(inout) :: req
    integer :: ierr, idx, outcount, idxs(1), reqs(1)
    logical :: flag
    reqs(1) = req
    flag = .false.
    select case (mod(turn, 8))
    case (0)
      call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    case (1)
      call MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE, ierr)
    case (2)
      call MPI_Waitany(1, reqs, idx, MPI_STATUS_IGNORE, ierr)
    case (3)
      call MPI_Waitsome(1, reqs, outcount, idxs, MPI_STATUSES_IGNORE, ierr)
    case (4)
      do while (.not. flag)
        call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE, ierr)
      end do
    case (5)
      do while (.not. flag)
        call MPI_Testall(1, reqs, flag, MPI_STATUSES_IGNORE, ierr)
      end do
    case (6)
      do while (.not. flag)
        call MPI_Testany(1, reqs, idx, flag, MPI_STATUS_IGNORE, ierr)
      end do
    case default
      outcount = 0
      do while (outcount == 0)
        call MPI_Testsome(1, reqs, outcount, idxs, MPI_STATUSES_IGNORE, ierr)
      end do
    end select
    req = reqs(1)
    turn = turn + 1
  end subroutine
end module every_support

program every
  use mpi
  use every_support
  implicit none
  integer :: inb(2)
  include 'ct_every_setup.inc'

  ! barrier
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Ibarrier(MPI_COMM_WORLD, req, ierr)
  call complete(req)
  functions = functions + 2

  ! bcast (root 0)
  rb = -1
  if (rank == 0) rb(1:2) = (/ 42, 43 /)
  call MPI_Bcast(rb, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call want('bcast', rb(2), 43)
  rb = -1
  if (rank == 0) rb(1:2) = (/ 42, 43 /)
  call MPI_Ibcast(rb, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('ibcast', rb(2), 43)
  functions = functions + 2

  ! gather, gatherv (root 0): rb(i) = i
  sb(1) = rank + 1
  call MPI_Gather(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call want('gather', rb(p), p)
  call MPI_Igather(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  if (rank == 0) call want('igather', rb(p), p)
  rb = -1
  call MPI_Gatherv(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call want('gatherv', rb(p), p)
  rb = -1
  call MPI_Igatherv(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  if (rank == 0) call want('igatherv', rb(p), p)
  functions = functions + 4

  ! scatter, scatterv (root 0): rank r gets 10 r
  do i = 1, p
    sb(i) = 10 * (i - 1)
  end do
  rb = -1
  call MPI_Scatter(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call want('scatter', rb(1), 10 * rank)
  rb = -1
  call MPI_Iscatter(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('iscatter', rb(1), 10 * rank)
  rb = -1
  call MPI_Scatterv(sb, cnt1, dsp, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call want('scatterv', rb(1), 10 * rank)
  rb = -1
  call MPI_Iscatterv(sb, cnt1, dsp, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('iscatterv', rb(1), 10 * rank)
  functions = functions + 4

  ! allgather, allgatherv
  sb(1) = rank + 1
  rb = -1
  call MPI_Allgather(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call want('allgather', rb(p), p)
  rb = -1
  call MPI_Iallgather(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('iallgather', rb(p), p)
  rb = -1
  call MPI_Allgatherv(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call want('allgatherv', rb(p), p)
  rb = -1
  call MPI_Iallgatherv(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('iallgatherv', rb(p), p)
  functions = functions + 4

  ! alltoall, alltoallv, alltoallw: rb(i) = 100 (i-1) + rank
  do i = 1, p
    sb(i) = 100 * rank + i - 1
  end do
  rb = -1
  call MPI_Alltoall(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call want('alltoall', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Ialltoall(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('ialltoall', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Alltoallv(sb, cnt1, dsp, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call want('alltoallv', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Ialltoallv(sb, cnt1, dsp, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('ialltoallv', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Alltoallw(sb, cnt1, bdsp, types, rb, cnt1, bdsp, types, MPI_COMM_WORLD, ierr)
  call want('alltoallw', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Ialltoallw(sb, cnt1, bdsp, types, rb, cnt1, bdsp, types, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('ialltoallw', rb(p), 100 * (p - 1) + rank)
  functions = functions + 6

  ! reductions
  sb(1) = rank + 1
  rb = -1
  call MPI_Reduce(sb, rb, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call want('reduce', rb(1), p * (p + 1) / 2)
  rb = -1
  call MPI_Ireduce(sb, rb, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  if (rank == 0) call want('ireduce', rb(1), p * (p + 1) / 2)
  call MPI_Allreduce(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call want('allreduce', rb(1), p * (p + 1) / 2)
  rb = -1
  call MPI_Iallreduce(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('iallreduce', rb(1), p * (p + 1) / 2)
  call MPI_Scan(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call want('scan', rb(1), (rank + 1) * (rank + 2) / 2)
  rb = -1
  call MPI_Iscan(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('iscan', rb(1), (rank + 1) * (rank + 2) / 2)
  rb = -1
  call MPI_Exscan(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) call want('exscan', rb(1), rank * (rank + 1) / 2)
  rb = -1
  call MPI_Iexscan(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  if (rank > 0) call want('iexscan', rb(1), rank * (rank + 1) / 2)
  do i = 1, p
    sb(i) = rank + i - 1
  end do
  rb = -1
  call MPI_Reduce_scatter(sb, rb, cnt1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call want('reduce_scatter', rb(1), p * (p - 1) / 2 + p * rank)
  rb = -1
  call MPI_Ireduce_scatter(sb, rb, cnt1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('ireduce_scatter', rb(1), p * (p - 1) / 2 + p * rank)
  rb = -1
  call MPI_Reduce_scatter_block(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call want('reduce_scatter_block', rb(1), p * (p - 1) / 2 + p * rank)
  rb = -1
  call MPI_Ireduce_scatter_block(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call complete(req)
  call want('ireduce_scatter_block', rb(1), p * (p - 1) / 2 + p * rank)
  inb = (/ 1, 2 /)
  rb(1:2) = (/ 10, 20 /)
  call MPI_Reduce_local(inb, rb, 2, MPI_INTEGER, MPI_SUM, ierr)
  call want('reduce_local', rb(2), 22)
  functions = functions + 13

  ! neighborhood on the ring: neighbour 1 is the left one, 2 the right one
  sb(1) = rank + 1
  rb = -1
  call MPI_Neighbor_allgather(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, ring, ierr)
  call want('neighbor_allgather', rb(1), left + 1)
  call want('neighbor_allgather', rb(2), right + 1)
  rb = -1
  call MPI_Ineighbor_allgather(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, ring, req, ierr)
  call complete(req)
  call want('ineighbor_allgather', rb(2), right + 1)
  rb = -1
  call MPI_Neighbor_allgatherv(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, ring, ierr)
  call want('neighbor_allgatherv', rb(1), left + 1)
  rb = -1
  call MPI_Ineighbor_allgatherv(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, ring, req, ierr)
  call complete(req)
  call want('ineighbor_allgatherv', rb(1), left + 1)
  sb(1:2) = (/ 100 * rank, 100 * rank + 1 /)
  rb = -1
  call MPI_Neighbor_alltoall(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, ring, ierr)
  call want('neighbor_alltoall', rb(1), 100 * left + 1)
  call want('neighbor_alltoall', rb(2), 100 * right)
  rb = -1
  call MPI_Ineighbor_alltoall(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, ring, req, ierr)
  call complete(req)
  call want('ineighbor_alltoall', rb(1), 100 * left + 1)
  rb = -1
  call MPI_Neighbor_alltoallv(sb, cnt1, dsp, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, ring, ierr)
  call want('neighbor_alltoallv', rb(2), 100 * right)
  rb = -1
  call MPI_Ineighbor_alltoallv(sb, cnt1, dsp, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, ring, req, ierr)
  call complete(req)
  call want('ineighbor_alltoallv', rb(2), 100 * right)
  rb = -1
  call MPI_Neighbor_alltoallw(sb, cnt1, adsp, types, rb, cnt1, adsp, types, ring, ierr)
  call want('neighbor_alltoallw', rb(1), 100 * left + 1)
  rb = -1
  call MPI_Ineighbor_alltoallw(sb, cnt1, adsp, types, rb, cnt1, adsp, types, ring, req, ierr)
  call complete(req)
  call want('ineighbor_alltoallw', rb(1), 100 * left + 1)
  functions = functions + 10

  call MPI_Comm_free(ring, ierr)
  if (rank == 0) print '(a, i0, a)', 'every: ', functions, ' functions'
  call MPI_Finalize(ierr)
end program every

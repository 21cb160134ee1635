! Every persistent collective function of `use mpi` (MPI 4.0 on; MPICH's Fortran, not Open MPI
! 4.1's, tests/test_fortran.py): each `MPI_<Coll>_init` once, started once (MPI_Start and
! MPI_Startall in turn), completed (MPI_Wait, MPI_Waitall, MPI_Test in a loop, in turn) and
! freed, the neighborhood ones on a periodic ring. Each result is checked against its closed
! form (those of ct_every.f90); a wrong one prints "wrong <name>" and aborts. Rank 0 prints
! "every_init: <n> functions".
module every_init_support
  use mpi
  implicit none
  include 'ct_every_want.inc'

  ! Starts the persistent request, completes it, frees it: the ways in turn.
  subroutine run(req)
    integer, intent(inout) :: req
    integer :: ierr, reqs(1)
    logical :: flag
    reqs(1) = req
    if (mod(turn, 2) == 0) then
      call MPI_Start(reqs(1), ierr)
    else
      call MPI_Startall(1, reqs, ierr)
    end if
    flag = .false.
    select case (mod(turn, 3))
    case (0)
      call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    case (1)
      call MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE, ierr)
    case default
      do while (.not. flag)
        call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE, ierr)
      end do
    end select
    call MPI_Request_free(reqs(1), ierr)
    req = reqs(1)
    turn = turn + 1
    functions = functions + 1
  end subroutine
end module every_init_support

program every_init
  use mpi
  use every_init_support
  implicit none
  include 'ct_every_setup.inc'

  call MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)

  rb = -1
  if (rank == 0) rb(1:2) = (/ 42, 43 /)
  call MPI_Bcast_init(rb, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('bcast_init', rb(2), 43)

  sb(1) = rank + 1
  rb = -1
  call MPI_Gather_init(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  if (rank == 0) call want('gather_init', rb(p), p)
  rb = -1
  call MPI_Gatherv_init(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  if (rank == 0) call want('gatherv_init', rb(p), p)

  do i = 1, p
    sb(i) = 10 * (i - 1)
  end do
  rb = -1
  call MPI_Scatter_init(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('scatter_init', rb(1), 10 * rank)
  rb = -1
  call MPI_Scatterv_init(sb, cnt1, dsp, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('scatterv_init', rb(1), 10 * rank)

  sb(1) = rank + 1
  rb = -1
  call MPI_Allgather_init(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('allgather_init', rb(p), p)
  rb = -1
  call MPI_Allgatherv_init(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('allgatherv_init', rb(p), p)

  do i = 1, p
    sb(i) = 100 * rank + i - 1
  end do
  rb = -1
  call MPI_Alltoall_init(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('alltoall_init', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Alltoallv_init(sb, cnt1, dsp, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('alltoallv_init', rb(p), 100 * (p - 1) + rank)
  rb = -1
  call MPI_Alltoallw_init(sb, cnt1, bdsp, types, rb, cnt1, bdsp, types, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('alltoallw_init', rb(p), 100 * (p - 1) + rank)

  sb(1) = rank + 1
  rb = -1
  call MPI_Reduce_init(sb, rb, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  if (rank == 0) call want('reduce_init', rb(1), p * (p + 1) / 2)
  rb = -1
  call MPI_Allreduce_init(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('allreduce_init', rb(1), p * (p + 1) / 2)
  rb = -1
  call MPI_Scan_init(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('scan_init', rb(1), (rank + 1) * (rank + 2) / 2)
  rb = -1
  call MPI_Exscan_init(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  if (rank > 0) call want('exscan_init', rb(1), rank * (rank + 1) / 2)
  do i = 1, p
    sb(i) = rank + i - 1
  end do
  rb = -1
  call MPI_Reduce_scatter_init(sb, rb, cnt1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('reduce_scatter_init', rb(1), p * (p - 1) / 2 + p * rank)
  rb = -1
  call MPI_Reduce_scatter_block_init(sb, rb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('reduce_scatter_block_init', rb(1), p * (p - 1) / 2 + p * rank)

  ! neighborhood on the ring: neighbour 1 is the left one, 2 the right one
  sb(1) = rank + 1
  rb = -1
  call MPI_Neighbor_allgather_init(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, ring, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('neighbor_allgather_init', rb(1), left + 1)
  call want('neighbor_allgather_init', rb(2), right + 1)
  rb = -1
  call MPI_Neighbor_allgatherv_init(sb, 1, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, ring, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('neighbor_allgatherv_init', rb(2), right + 1)
  sb(1:2) = (/ 100 * rank, 100 * rank + 1 /)
  rb = -1
  call MPI_Neighbor_alltoall_init(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, ring, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('neighbor_alltoall_init', rb(1), 100 * left + 1)
  call want('neighbor_alltoall_init', rb(2), 100 * right)
  rb = -1
  call MPI_Neighbor_alltoallv_init(sb, cnt1, dsp, MPI_INTEGER, rb, cnt1, dsp, MPI_INTEGER, ring, &
                                   MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('neighbor_alltoallv_init', rb(2), 100 * right)
  rb = -1
  call MPI_Neighbor_alltoallw_init(sb, cnt1, adsp, types, rb, cnt1, adsp, types, ring, MPI_INFO_NULL, req, ierr)
  call run(req)
  call want('neighbor_alltoallw_init', rb(1), 100 * left + 1)

  call MPI_Comm_free(ring, ierr)
  if (rank == 0) print '(a, i0, a)', 'every_init: ', functions, ' functions'
  call MPI_Finalize(ierr)
end program every_init

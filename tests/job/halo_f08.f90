! halo_f08: the Fortran halo of halo_fortran.f90 written against
! `use mpi_f08`, whose calls reach Open MPI's library through the
! ompi_NAME_f entry points (collector/job/rank/pmpi_fortran_records.h),
! and made with the request calls the other halo does not make: each step
! the receives polled with MPI_Test and MPI_Testany and waited for with
! MPI_Waitany, the sends tested with MPI_Testall and MPI_Testsome and
! waited for with MPI_Waitsome (then MPI_Waitall for any left); every 10
! steps a token sent with MPI_Isend and let go with MPI_Request_free, and
! received with MPI_Recv; an MPI_Allreduce every 50, an MPI_Reduce and an
! MPI_Barrier at the end; rank 0 prints a checksum.
!
!   halo_f08 STEPS PASSES [LARGER_RANK]
program halo_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 4096, halo = 16384
  integer :: rank, size, left, right, step, p, i, steps, passes, larger, index, outcount
  integer :: indices(2)
  logical :: flag
  type(MPI_Request) :: receives(2), sends(2), token_request
  type(MPI_Status) :: status, statuses(2)
  character(len=32) :: arg
  double precision :: field(n), sendl(halo), sendr(halo), recvl(halo), recvr(halo)
  double precision :: local, total, residual, token, got

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  steps = 200
  passes = 300
  larger = -1
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) steps
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) passes
  end if
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    read (arg, *) larger
  end if
  if (rank == larger) passes = passes * 3 / 2
  left = mod(rank + size - 1, size)
  right = mod(rank + 1, size)
  token = dble(rank)
  do i = 1, n
    field(i) = sin(0.001d0 * dble(i + rank))
  end do
  residual = 0
  do step = 1, steps
    local = 0
    do p = 1, passes
      do i = 2, n - 1
        field(i) = 0.25d0 * field(i - 1) + 0.5d0 * field(i) + 0.25d0 * field(i + 1) + 1d-9
      end do
      local = local + field(n / 2)
    end do
    sendl = field(2)
    sendr = field(n - 1)
    call MPI_Irecv(recvl, halo, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, receives(1))
    call MPI_Irecv(recvr, halo, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, receives(2))
    call MPI_Isend(sendr, halo, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, sends(1))
    call MPI_Isend(sendl, halo, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, sends(2))
    call MPI_Test(receives(1), flag, status)
    call MPI_Testany(2, receives, index, flag, status)
    do i = 1, 2
      call MPI_Waitany(2, receives, index, status)
    end do
    call MPI_Testall(2, sends, flag, statuses)
    call MPI_Testsome(2, sends, outcount, indices, statuses)
    call MPI_Waitsome(2, sends, outcount, indices, MPI_STATUSES_IGNORE)
    call MPI_Waitall(2, sends, MPI_STATUSES_IGNORE)
    field(1) = recvl(1)
    field(n) = recvr(1)
    if (mod(step, 10) == 0) then
      call MPI_Isend(token, 1, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, token_request)
      call MPI_Request_free(token_request)
      call MPI_Recv(got, 1, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    end if
    if (mod(step, 50) == 0) then
      call MPI_Allreduce(local, residual, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    end if
  end do
  local = sum(field)
  call MPI_Reduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, i0, a, es20.12)', 'halo_f08: ', size, ' ranks, ', steps, ' steps, checksum ', total
  call MPI_Finalize()
end program halo_f08

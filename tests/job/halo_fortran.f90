! halo_fortran: a Fortran stencil skeleton for `corenoise job`'s ground
! truth (docs/job.md): each step a fixed amount of work, then halos with
! both neighbours of a ring (MPI_Irecv, MPI_Isend, MPI_Waitall), an
! MPI_Sendrecv every 10 steps, an MPI_Allreduce every 50, an MPI_Barrier
! at the end; rank 0 prints a checksum. Written against `use mpi`, built
! with each family's own Fortran wrapper (mpif90.mpich, mpif90.openmpi).
!
!   halo_fortran STEPS PASSES [LARGER_RANK]
program halo_fortran
  use mpi
  implicit none
  integer, parameter :: n = 4096, halo = 16384
  integer :: ierr, rank, size, left, right, step, p, i, steps, passes, larger
  integer :: requests(4), status(MPI_STATUS_SIZE)
  character(len=32) :: arg
  double precision :: field(n), sendl(halo), sendr(halo), recvl(halo), recvr(halo)
  double precision :: local, total, residual

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
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
    call MPI_Irecv(recvl, halo, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Irecv(recvr, halo, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Isend(sendr, halo, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, requests(3), ierr)
    call MPI_Isend(sendl, halo, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, requests(4), ierr)
    call MPI_Waitall(4, requests, MPI_STATUSES_IGNORE, ierr)
    field(1) = recvl(1)
    field(n) = recvr(1)
    if (mod(step, 10) == 0) then
      call MPI_Sendrecv(field(2), 1, MPI_DOUBLE_PRECISION, right, 3, local, 1, MPI_DOUBLE_PRECISION, left, 3, &
                        MPI_COMM_WORLD, status, ierr)
    end if
    if (mod(step, 50) == 0) then
      call MPI_Allreduce(local, residual, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
  end do
  local = sum(field)
  call MPI_Reduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, i0, a, es20.12)', 'halo_fortran: ', size, ' ranks, ', steps, ' steps, checksum ', total
  call MPI_Finalize(ierr)
end program halo_fortran

! EarthVerse adapter in Fortran (Table 14: rain; kinematics; moisture
! transport). Compiled once with gfortran outside the sandbox (fixed,
! trusted source), run in the OS sandbox as:
!   fortran_ops OPERATION INPUT.txt P1 P2
! INPUT.txt: first line n and k (values, columns), then n lines of k values
! (-9.e33 = missing). Prints one JSON object.
program fortran_ops
  implicit none
  character(len=64) :: op, a1, a2
  character(len=1024) :: path
  integer :: n, k, i, j, wet, window, cnt, u
  real(8), allocatable :: x(:, :)
  real(8) :: thr, total, mx, acc, best, s, d, um, vm, e, q, flux, fsum, fmax
  real(8), parameter :: miss = -9.0d33, pi = 3.14159265358979323846d0
  call get_command_argument(1, op)
  call get_command_argument(2, path)
  call get_command_argument(3, a1)
  call get_command_argument(4, a2)
  open (newunit=u, file=trim(path), status='old', action='read')
  read (u, *) n, k
  allocate (x(n, k))
  do i = 1, n
    read (u, *) (x(i, j), j=1, k)
  end do
  close (u)
  select case (trim(op))
  case ('fortran_rain')
    read (a1, *) thr
    read (a2, *) window
    total = 0; mx = -huge(1d0); wet = 0; cnt = 0; best = -huge(1d0)
    do i = 1, n
      if (x(i, 1) <= miss / 2) cycle
      cnt = cnt + 1
      total = total + x(i, 1)
      mx = max(mx, x(i, 1))
      if (x(i, 1) >= thr) wet = wet + 1
    end do
    do i = 1, n - window + 1
      acc = 0
      do j = i, i + window - 1
        if (x(j, 1) > miss / 2) acc = acc + x(j, 1)
      end do
      best = max(best, acc)
    end do
    if (best < -huge(1d0) / 2) best = total
    write (*, '(a,i0,a,es24.16,a,es24.16,a,i0,a,i0,a,es24.16,a)') '{"status": "ok", "result": {"steps": ', cnt, &
      ', "total_mm": ', total, ', "max_mm": ', mx, ', "wet_steps": ', wet, ', "window": ', window, &
      ', "max_window_total_mm": ', best, '}}'
  case ('fortran_kinematics')
    um = 0; vm = 0; cnt = 0
    do i = 1, n
      if (x(i, 1) <= miss / 2 .or. x(i, 2) <= miss / 2) cycle
      s = x(i, 1) / 3.6d0
      d = x(i, 2) * pi / 180d0
      um = um - s * sin(d)
      vm = vm - s * cos(d)
      cnt = cnt + 1
    end do
    um = um / cnt; vm = vm / cnt
    write (*, '(a,i0,a,es24.16,a,es24.16,a,es24.16,a)') '{"status": "ok", "result": {"n": ', cnt, &
      ', "u_mean_m_s": ', um, ', "v_mean_m_s": ', vm, ', "vector_mean_speed_m_s": ', sqrt(um**2 + vm**2), '}}'
  case ('fortran_moisture_transport')
    fsum = 0; fmax = -huge(1d0); cnt = 0
    do i = 1, n
      if (any(x(i, 1:3) <= miss / 2)) cycle
      e = 6.112d0 * exp(17.67d0 * x(i, 1) / (x(i, 1) + 243.5d0))
      q = 0.622d0 * e / (x(i, 2) - 0.378d0 * e)
      flux = 1000d0 * q * x(i, 3) / 3.6d0
      fsum = fsum + flux
      fmax = max(fmax, flux)
      cnt = cnt + 1
    end do
    write (*, '(a,i0,a,es24.16,a,es24.16,a)') '{"status": "ok", "result": {"n": ', cnt, &
      ', "mean_flux_g_kg_m_s": ', fsum / cnt, ', "max_flux_g_kg_m_s": ', fmax, '}}'
  case default
    write (*, '(a)') '{"status": "error", "failure_class": "adapter", "message": "unknown operation"}'
  end select
end program fortran_ops

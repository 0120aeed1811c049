#!/usr/bin/env bash
# Installs what corenoise needs from Debian 12's packages (only what is
# missing), then configures and builds it in ./build.
#
#   deploy/dev-setup.sh           build dependencies, then build what the
#                                 product needs: corenoise, corenoised, the
#                                 MPI plugins and the in-job libraries
#   deploy/dev-setup.sh --tests   also what the test suite and benchmarks
#                                 use, and build them too (everything)
#
# CORENOISE_SANITIZE=address,undefined (or =thread) in the environment builds
# ./build with those sanitizers (cmake/Sanitizers.cmake); unset or empty
# builds without. The runtimes come with g++ (libgcc-12-dev).
#
# Run as root (or with sudo available) on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

# Both MPI families: corenoise builds a plugin for each (collector/mpi/), and
# the tests run every MPI suite under both launchers.
build_packages=(build-essential cmake ninja-build pkg-config libboost-dev libhwloc-dev hwloc
  prometheus-cpp-dev mpich libmpich-dev openmpi-bin libopenmpi-dev nlohmann-json3-dev
  libgtest-dev libtracefs-dev libtraceevent-dev
  libssl-dev libyaml-cpp-dev libcrypt-dev openssl)
# libssl-dev libyaml-cpp-dev libcrypt-dev: the exporter's web config (TLS
# through Asio's OpenSSL streams, node_exporter's YAML, bcrypt hashes checked
# by libcrypt); openssl: the exporter's TLS tests make their CA and
# certificates with it (and curl, below, scrapes over TLS).
# prometheus-node-exporter: a real Prometheus joins its CPU metrics with the
# daemon's (docs/metrics.md);
# chromium: the HTML report test opens the page in a headless browser;
# iproute2: the two-host sweep test builds network namespaces;
# jq: the Slurm health check reads corenoise's JSON with it;
# the shipped shell scripts are linted with shellcheck;
# groff-base: the man page tests render the pages with groff;
# dpkg-dev file systemd adduser procps man-db: the package test builds the
# .deb (CPack reads the binaries' dependencies with file and dpkg-shlibdeps),
# installs it, and checks its units with systemd-analyze;
# rt-tests python3: the accuracy benchmark (docs/validation.md) runs oslat
# beside corenoise from a Python driver;
# clang libclang-rt-14-dev: libFuzzer and the sanitizers (docs/reliability.md);
# clang-format: the style check (tests/style/format_check.sh);
# universal-ctags: the function length check finds definitions and their
# ends (tests/style/function_length_check.sh);
# wrk: the exporter's load benchmark; faketime: steps the daemon's wall clock;
# strace: proves the daemon starts no other program;
# slurmctld slurmd slurm-client munge: a real one-node Slurm (health check,
# prolog and epilog, srun --mpi=pmi2 and --mpi=pmix sweeps), and a slurmd per
# node of the test cluster (tests/tools/cluster.sh), whose tests read
# Prometheus's API with curl;
# python3-mpi4py python3-numpy: `corenoise job`'s ground truth runs the
# story's Python script (mpi4py under Open MPI, numpy in place of JAX);
# patchelf: the MPICH-ABI test makes a copy of MPICH into another
# library (libmpi.so.12, as Intel MPI's) and a program of it;
# iputils-ping: the tracing tests flood a namespace with pings to make
# NET_RX softirqs on a known CPU (libtracefs-dev and libtraceevent-dev,
# rtla's libraries, are build packages: corenoise names culprits with them);
# ccache: CI builds everything from a clean clone at every change, and the
# cache (root's ~/.cache/ccache) turns the files that did not change into
# lookups: see the compiler launcher below.
# debootstrap and zstd: Package.PackagedNode makes a fresh Debian 12 root
# (cached as a zstd tarball under /var/cache/corenoise-tests), installs the
# built .deb in it and boots its systemd (tests/deploy/packaged_node_test.sh);
# debootstrap also makes the fresh-machine check's root.
# gfortran: the Fortran ground truth (tests/job/halo_fortran.f90 with `use
# mpi`, halo_f08.f90 with `use mpi_f08`) is built by mpif90.mpich and
# mpif90.openmpi, which need it; libmpich-dev and libopenmpi-dev pull it in
# today; named here so that the tests keep their compiler if they stop.
test_packages=(gfortran libopenblas-dev prometheus prometheus-node-exporter chromium iproute2 jq shellcheck groff-base
  dpkg-dev file systemd adduser procps man-db rt-tests python3
  clang libclang-rt-14-dev clang-format universal-ctags wrk faketime strace
  slurmctld slurmd slurm-client munge curl
  python3-mpi4py python3-numpy scalapack-mpi-test patchelf ccache iputils-ping
  debootstrap zstd)

packages=("${build_packages[@]}")
case "${1:-}" in
  --tests) packages+=("${test_packages[@]}") ;;
  "") ;;
  *) echo "usage: $0 [--tests]" >&2; exit 1 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "dev-setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ccache where it is installed (--tests installs it): keyed on paths
# relative to this checkout, so that clones in other folders share entries.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# Always passed, so that a build/ configured for sanitizers goes back to a
# plain build when the variable is unset.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCORENOISE_SANITIZE="${CORENOISE_SANITIZE:-}"
if [ "${1:-}" = --tests ]; then
  cmake --build build -j"$(nproc)"
else
  # The command and the daemon bring what they load (the plugins and the
  # in-job libraries: collector/CMakeLists.txt's dependencies).
  cmake --build build -j"$(nproc)" --target corenoise corenoised
fi

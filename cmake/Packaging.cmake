# CPack: the Debian package `corenoise` (cpack -G DEB in the build folder).
# Included by the top-level CMakeLists.txt after the subfolders, so the
# binaries' and man pages' install() rules are already in place.
#
# What the package holds besides those: the systemd units, the config file
# and /etc/default/corenoise-collect (conffiles), the documentation, and the
# maintainer scripts of deploy/debian/ (system user, systemd integration).
# Absolute destinations below are Debian's paths (/etc, /lib/systemd/system),
# which a /usr prefix cannot express.

set(CORENOISE_PACKAGE_MAINTAINER "corenoise developers <corenoise@localhost>"
    CACHE STRING "The Maintainer field of the Debian package (NAME <EMAIL>)")

set(_deploy "${PROJECT_SOURCE_DIR}/deploy")

# ---- what goes in besides the binaries -------------------------------------
install(FILES
  ${_deploy}/systemd/corenoised.service
  ${_deploy}/systemd/corenoise-collect.service
  ${_deploy}/systemd/corenoise-collect.timer
  DESTINATION /lib/systemd/system)

# Conffiles: dpkg keeps an admin's edits across upgrades and removes them
# only on purge. CPack 3.25 marks nothing by itself, so the list is written
# here from what is installed under /etc.
set(_conffiles "")
# deploy/corenoised.conf comes from other work; ship it once it exists.
if(EXISTS ${_deploy}/corenoised.conf)
  install(FILES ${_deploy}/corenoised.conf DESTINATION /etc/corenoise)
  string(APPEND _conffiles "/etc/corenoise/corenoised.conf\n")
endif()
install(FILES ${_deploy}/debian/corenoise-collect.default
  DESTINATION /etc/default RENAME corenoise-collect)
string(APPEND _conffiles "/etc/default/corenoise-collect\n")

# Slurm's programs find their helpers next to themselves (deploy/slurm/).
install(PROGRAMS
  ${_deploy}/slurm/corenoise-healthcheck
  ${_deploy}/slurm/corenoise-prolog
  ${_deploy}/slurm/corenoise-epilog
  DESTINATION libexec/corenoise/slurm)
install(FILES
  ${_deploy}/slurm/corenoise-slurm.sh
  ${_deploy}/slurm/corenoise-slurm-cpus.sh
  ${_deploy}/slurm/corenoise-drain-reason.jq
  DESTINATION libexec/corenoise/slurm)
install(FILES ${_deploy}/slurm/corenoise-slurm.default
  DESTINATION /etc/default RENAME corenoise-slurm)
string(APPEND _conffiles "/etc/default/corenoise-slurm\n")

# Prometheus and Grafana: examples for the monitoring server, not this node.
install(DIRECTORY ${_deploy}/prometheus ${_deploy}/grafana
  DESTINATION share/doc/corenoise/examples)

set(_conffiles_file "${PROJECT_BINARY_DIR}/packaging/conffiles")
file(WRITE "${_conffiles_file}" "${_conffiles}")

file(GLOB _docs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_docs} DESTINATION share/doc/corenoise)

# ---- the package --------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME corenoise)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${CORENOISE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Release builds carry debug info; a package ships stripped binaries.
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "finds the CPU cores that make parallel jobs wait")

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # corenoise_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CORENOISE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The long description; CPack puts the summary above it and indents it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "corenoised runs fixed-work probes pinned to every core of a node at
intervals, says why a core is slow (lower clock, interruptions or
contention) and exports per-core metrics for Prometheus. The corenoise
command probes a node, sweeps a whole allocation over MPI and collects the
daemons' results across the cluster.")
# Library dependencies from the binaries (dpkg-shlibdeps, package dpkg-dev),
# plus what the maintainer scripts and units run: adduser (postinst),
# procps (/bin/kill for ExecReload=).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, procps")
# mpiexec (hydra) for `corenoise sweep`/`collect` and the collect timer; the
# daemon runs without it.
# jq: the Slurm health check reads corenoise's JSON with it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mpich, jq")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${_deploy}/debian/postinst;${_deploy}/debian/prerm;${_deploy}/debian/postrm;${_conffiles_file}")
# Scripts 0755 and conffiles 0644 whatever the checkout's modes are.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

include(CPack)

# The Debian package (cmake/Packaging.cmake) and its systemd units.
#
# Package.InstallVerifyRemove: cpack -G DEB from this build folder, check the
# .deb, dpkg -i, check the installed system, dpkg -r, dpkg -P, check nothing
# is left. Needs root and the packages dpkg-dev, systemd and adduser; it
# installs into /usr, so it runs alone.
add_test(NAME Package.InstallVerifyRemove
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/package_test.sh
    ${CMAKE_CPACK_COMMAND} ${PROJECT_BINARY_DIR}/CPackConfig.cmake
    ${PROJECT_BINARY_DIR}/packaging/conffiles ${PROJECT_VERSION})
set_tests_properties(Package.InstallVerifyRemove PROPERTIES
  RUN_SERIAL TRUE TIMEOUT 180 LABELS deploy)

# Systemd.UnitSecurity: the source unit's sandbox, scored offline by
# systemd-analyze security (no running systemd needed); at most 2.0.
add_test(NAME Systemd.UnitSecurity
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/package_exposure.sh
    ${PROJECT_SOURCE_DIR}/deploy/systemd/corenoised.service 2.0)
set_tests_properties(Systemd.UnitSecurity PROPERTIES TIMEOUT 60 LABELS deploy)

# Package.ScriptsShellcheck: the maintainer scripts run as root on every
# node; shellcheck (package shellcheck) catches quoting and set -u slips.
add_test(NAME Package.ScriptsShellcheck
  # -x -P SCRIPTDIR: the test scripts source tests/tools/debian_root.sh.
  COMMAND shellcheck -x -P SCRIPTDIR
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm
    ${CMAKE_CURRENT_SOURCE_DIR}/package_test.sh
    ${CMAKE_CURRENT_SOURCE_DIR}/package_exposure.sh
    ${CMAKE_CURRENT_SOURCE_DIR}/install_prefix_test.sh
    ${CMAKE_CURRENT_SOURCE_DIR}/packaged_node_test.sh
    ${PROJECT_SOURCE_DIR}/tests/tools/fresh_machine_check.sh
    ${PROJECT_SOURCE_DIR}/tests/tools/debian_root.sh)
set_tests_properties(Package.ScriptsShellcheck PROPERTIES TIMEOUT 60 LABELS deploy)

# Package.InstallPrefixFindsItsPlugins: installed under another prefix
# (DESTDIR, a temporary directory), corenoise loads the MPI plugins
# installed beside it, by their path relative to the executable.
add_test(NAME Package.InstallPrefixFindsItsPlugins
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install_prefix_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(Package.InstallPrefixFindsItsPlugins PROPERTIES TIMEOUT 120 LABELS deploy)

# Package.PackagedNode: the .deb installed with apt into a fresh Debian 12
# root, a real systemd booted in it, corenoised.service as shipped; two
# ordinary users' `corenoise job` (mpiexec.mpich, mpirun.openmpi) each on its
# own CPU taken and exported, forgeries and a flood refused and counted,
# root's pause/status/resume served (packaged_node_test.sh). Needs root,
# debootstrap, zstd, Debian's mirror and TCP port 19847 free; the first run
# on a machine caches the base root under /var/cache/corenoise-tests.
add_test(NAME Package.PackagedNode
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/packaged_node_test.sh
    ${CMAKE_CPACK_COMMAND} ${PROJECT_BINARY_DIR}/CPackConfig.cmake ${PROJECT_VERSION}
    ${PROJECT_BINARY_DIR})
set_tests_properties(Package.PackagedNode PROPERTIES
  RUN_SERIAL TRUE TIMEOUT 900 LABELS deploy)

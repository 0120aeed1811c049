# CORENOISE_SANITIZE: build everything (libraries, binaries, tests, tools)
# with GCC's sanitizers, and run ctest with options that make any report
# visible. Empty (the default) builds as usual.
#
#   -DCORENOISE_SANITIZE=address,undefined   ASan + LSan + UBSan
#   -DCORENOISE_SANITIZE=thread              TSan
#
# The runtimes (libasan8, libubsan1, libtsan2) come with g++ 12 through
# libgcc-12-dev, so deploy/dev-setup.sh needs no extra package for them.
set(CORENOISE_SANITIZE "" CACHE STRING
  "Sanitizers to build with: empty, address,undefined, or thread")
set_property(CACHE CORENOISE_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")

# Environment for running instrumented programs during the build
# (docs/man runs `corenoise --help`): `cmake -E env ${CORENOISE_BUILD_RUN_ENV}`.
set(CORENOISE_BUILD_RUN_ENV "")

if(CORENOISE_SANITIZE STREQUAL "")
  return()
endif()

string(REPLACE "," ";" _corenoise_sanitizers "${CORENOISE_SANITIZE}")
foreach(_s IN LISTS _corenoise_sanitizers)
  if(NOT _s MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "CORENOISE_SANITIZE: unknown sanitizer '${_s}' "
      "(use address,undefined or thread)")
  endif()
endforeach()
if("thread" IN_LIST _corenoise_sanitizers AND "address" IN_LIST _corenoise_sanitizers)
  message(FATAL_ERROR "CORENOISE_SANITIZE: thread and address cannot be combined")
endif()

# Frame pointers give the reports whole stacks at no cost to what they find.
set(_corenoise_sanitize_flags -fsanitize=${CORENOISE_SANITIZE} -fno-omit-frame-pointer)
if("undefined" IN_LIST _corenoise_sanitizers)
  # UBSan only prints and carries on by default; aborting makes a finding fail
  # the test that caused it.
  list(APPEND _corenoise_sanitize_flags -fno-sanitize-recover=all)
endif()
# Directory-level options, set before any add_subdirectory(), so every target
# of the project is instrumented the same way and links the same runtime.
add_compile_options(${_corenoise_sanitize_flags})
add_link_options(${_corenoise_sanitize_flags})
message(STATUS "corenoise: building with -fsanitize=${CORENOISE_SANITIZE}")

# Suppressions and options every instrumented program carries in itself, so
# they hold wherever it runs: under ctest, but also when the build runs it
# (gen_manpages calls `corenoise sweep --help`, which starts MPI) or when a
# test starts it through setpriv, mpiexec or dpkg. tests/sanitizers/*.supp
# are compiled in through the runtimes' __*_default_suppressions hooks.
set(_supp "${CMAKE_SOURCE_DIR}/tests/sanitizers")
file(READ "${_supp}/lsan.supp" CORENOISE_LSAN_SUPP)
file(READ "${_supp}/tsan.supp" CORENOISE_TSAN_SUPP)
set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  "${_supp}/lsan.supp" "${_supp}/tsan.supp")
configure_file("${CMAKE_CURRENT_LIST_DIR}/sanitizer_defaults.cpp.in"
  "${CMAKE_BINARY_DIR}/sanitizer_defaults.cpp" @ONLY)
add_library(corenoise_sanitizer_defaults OBJECT "${CMAKE_BINARY_DIR}/sanitizer_defaults.cpp")
# Every target made after this line links the object, so every executable
# defines the hooks (static libraries carry a copy the linker never needs).
link_libraries(corenoise_sanitizer_defaults)

# ---- how ctest runs the instrumented programs --------------------------------
# Every ASan, LSan and TSan report goes to a file under
# build/sanitizer-reports/ (one per process, NAME.PID) instead of stderr:
# many tests run corenoise, corenoised or mpiexec as child processes and
# check only their exit status or part of their output, and some of them
# expect a failure. A report from such a child would
# otherwise pass unseen. .ci/run fails when the folder is not empty after
# ctest, and prints what is in it.
set(CORENOISE_SANITIZER_REPORTS "${CMAKE_BINARY_DIR}/sanitizer-reports")
# The environment adds to the compiled-in defaults, it does not replace them.
# verify_asan_link_order=0: tests that preload a library into corenoised
# (libfaketime, for the stepped wall clock) put it ahead of ASan's runtime,
# which ASan refuses by default; a preload that interposes on nothing ASan
# intercepts is harmless.
set(CORENOISE_SANITIZER_ENV
  "ASAN_OPTIONS=log_path=${CORENOISE_SANITIZER_REPORTS}/asan:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0:verify_asan_link_order=0"
  "LSAN_OPTIONS=print_suppressions=0"
  # UBSan beside ASan (GCC 12) ignores log_path and prints to stderr; it
  # aborts instead (SIGABRT, not exit 1), so that a child process that a test
  # expects to fail with status 1 cannot hide a finding that way.
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1:suppressions=${_supp}/ubsan.supp"
  "TSAN_OPTIONS=log_path=${CORENOISE_SANITIZER_REPORTS}/tsan:second_deadlock_stack=1:print_suppressions=0")
if("thread" IN_LIST _corenoise_sanitizers)
  # Not a suppression, a crash: Debian's MPICH links UCX, whose libucm hooks
  # madvise() as soon as `corenoise` loads it (MPI_Init or not). glibc calls
  # madvise() on a thread's stack after the thread has ended, when TSan has
  # already torn down its state for it; the hook takes a pthread rwlock, TSan
  # intercepts it and dereferences the dead state: SIGSEGV at the end of every
  # probe thread (ucm_madvise -> ucm_event_enter -> pthread_rwlock_rdlock).
  # UCX's own switch turns its mmap/madvise hooks off; MPICH needs them only
  # for registration caches of RDMA networks, which one host never uses.
  # The build needs it too: gen_manpages runs `corenoise sweep --help`.
  list(APPEND CORENOISE_SANITIZER_ENV "UCX_MEM_MMAP_HOOK_MODE=none")
  list(APPEND CORENOISE_BUILD_RUN_ENV "UCX_MEM_MMAP_HOOK_MODE=none")
endif()

# gtest_discover_tests() adds its tests only when ctest runs, so test
# properties cannot reach them; instead ctest reads this script first (the
# top directory's TEST_INCLUDE_FILES come before any test or subdirectory) and
# exports the options into its own environment, which every test and every
# child process inherits. It also empties the report folder, so the folder
# holds only what this ctest run found.
set(_script "${CMAKE_BINARY_DIR}/sanitizer_env.cmake")
set(_lines "# Generated by cmake/Sanitizers.cmake\n")
string(APPEND _lines "file(REMOVE_RECURSE \"${CORENOISE_SANITIZER_REPORTS}\")\n")
string(APPEND _lines "file(MAKE_DIRECTORY \"${CORENOISE_SANITIZER_REPORTS}\")\n")
foreach(_kv IN LISTS CORENOISE_SANITIZER_ENV)
  string(FIND "${_kv}" "=" _eq)
  string(SUBSTRING "${_kv}" 0 ${_eq} _k)
  math(EXPR _eq "${_eq} + 1")
  string(SUBSTRING "${_kv}" ${_eq} -1 _v)
  string(APPEND _lines "set(ENV{${_k}} \"${_v}\")\n")
endforeach()
file(WRITE "${_script}" "${_lines}")
set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY TEST_INCLUDE_FILES "${_script}")

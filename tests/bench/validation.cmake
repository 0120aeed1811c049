# Accuracy harness against oslat (docs/validation.md): a driver script, since
# it orchestrates processes (injector, corenoise, oslat, a memory hog) rather
# than timing code of its own. Never part of `all`: it takes ~10 minutes and
# the machine to itself (it holds /tmp/corenoise-measure.lock per chunk).
#   ninja -C BUILD validation_bench
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_FOUND)
  add_custom_target(validation_bench
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/accuracy_bench.py
            --build-dir ${CMAKE_BINARY_DIR}
    DEPENDS corenoise noise_injector
    USES_TERMINAL
    COMMENT "accuracy harness: injected noise vs corenoise and oslat")
endif()

# corenoise inject / selftest: the tool that injects known noise, and the
# check that the probe finds it, tested here.

# The pure parts: inject's options, the busy pattern and schedule, the
# ready line. The command's sources are compiled in: `corenoise` is an
# executable, not a library.
add_executable(corenoise_inject_unit_tests
  unit/noise_injection_test.cpp
  ${PROJECT_SOURCE_DIR}/collector/cli/command_line.cpp
  ${PROJECT_SOURCE_DIR}/collector/cli/inject_command.cpp)
target_link_libraries(corenoise_inject_unit_tests PRIVATE corenoise::probe GTest::gtest_main)
gtest_discover_tests(corenoise_inject_unit_tests DISCOVERY_TIMEOUT 60)

# The real binary: inject starts, stops and is found by the probe; selftest
# passes on this machine.
add_executable(corenoise_inject_tests integration/inject_test.cpp)
target_link_libraries(corenoise_inject_tests PRIVATE corenoise::probe GTest::gtest_main)
target_compile_definitions(corenoise_inject_tests PRIVATE CORENOISE_BIN="$<TARGET_FILE:corenoise>")
add_dependencies(corenoise_inject_tests corenoise)
# Serial: they measure this machine and must not overlap other measurements.
gtest_discover_tests(corenoise_inject_tests DISCOVERY_TIMEOUT 60
  PROPERTIES RUN_SERIAL TRUE LABELS integration TIMEOUT 300)

# Man pages (docs/man) in step with --help, and the example configuration
# (deploy/corenoised.conf) in step with corenoised's option table.

# ManPages.OptionsMatchHelp, RenderCleanly, InstallGzipped: the generated
# pages against the built programs. Need groff (groff-base) and gzip.
set(manpages_test ${CMAKE_CURRENT_SOURCE_DIR}/manpages_test.sh)
add_test(NAME ManPages.OptionsMatchHelp
  COMMAND ${manpages_test} options ${CORENOISE_MAN_DIR} $<TARGET_FILE:corenoise>
    $<TARGET_FILE:corenoised>)
add_test(NAME ManPages.RenderCleanly COMMAND ${manpages_test} render ${CORENOISE_MAN_DIR})
add_test(NAME ManPages.InstallGzipped
  COMMAND ${manpages_test} install ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR} ${CORENOISE_MAN_DIR})
set_tests_properties(ManPages.OptionsMatchHelp ManPages.RenderCleanly ManPages.InstallGzipped
  PROPERTIES TIMEOUT 120 LABELS deploy)

# The converter that writes the pages (ManPages.*), and the example
# configuration against the option table and `corenoised --check-config`
# (ConfigExample.*).
add_executable(corenoise_manpages_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/manpages_converter_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/config_example_test.cpp)
target_link_libraries(corenoise_manpages_tests PRIVATE
  corenoise::manpage_text corenoise::daemon GTest::gtest_main)
target_compile_definitions(corenoise_manpages_tests PRIVATE
  CORENOISED_BIN="$<TARGET_FILE:corenoised>"
  CONFIG_EXAMPLE="${PROJECT_SOURCE_DIR}/deploy/corenoised.conf")
add_dependencies(corenoise_manpages_tests corenoised)
gtest_discover_tests(corenoise_manpages_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS deploy)

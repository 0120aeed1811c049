# deploy/prometheus: the scrape config and the rules, checked by promtool
# (Debian package `prometheus`, from deploy/dev-setup.sh --tests), and the
# rules' metric names checked against docs/metrics.md.
set(CORENOISE_PROMETHEUS_DIR ${PROJECT_SOURCE_DIR}/deploy/prometheus)

# Found at configure time where installed. Where it is not, the tests still
# exist and run the bare name, so ctest reports them failed ("Unable to find
# executable: promtool") rather than skipping them.
find_program(CORENOISE_PROMTOOL promtool)
if(CORENOISE_PROMTOOL)
  set(corenoise_promtool ${CORENOISE_PROMTOOL})
else()
  message(WARNING "promtool not found: the Prometheus.* tests and "
                  "GrafanaDashboard.QueriesAreValidPromQL will fail; "
                  "apt-get install prometheus (or run deploy/dev-setup.sh --tests)")
  set(corenoise_promtool promtool)
endif()

# check config resolves rule_files and file_sd files against the config's own
# folder, so this also loads corenoise.rules.yml and targets/*.yml. A missing
# target file is only a warning to promtool; here it fails.
add_test(NAME Prometheus.CheckConfig
  COMMAND ${corenoise_promtool} check config --lint=all --lint-fatal prometheus.yml
  WORKING_DIRECTORY ${CORENOISE_PROMETHEUS_DIR})
add_test(NAME Prometheus.CheckRules
  COMMAND ${corenoise_promtool} check rules --lint=all --lint-fatal corenoise.rules.yml
  WORKING_DIRECTORY ${CORENOISE_PROMETHEUS_DIR})
add_test(NAME Prometheus.TestRules
  COMMAND ${corenoise_promtool} test rules corenoise.rules.test.yml corenoise.rules.long.test.yml
  WORKING_DIRECTORY ${CORENOISE_PROMETHEUS_DIR})
set_tests_properties(Prometheus.CheckConfig Prometheus.CheckRules Prometheus.TestRules
  PROPERTIES TIMEOUT 60 LABELS deploy FAIL_REGULAR_EXPRESSION "WARNING|FAILED")

# Names in the rules and their unit tests exist in the contract; every alert
# is unit-tested and has a severity, a `for:` and annotations.
# prometheus_contract.* (reading docs/metrics.md and the rules) is shared
# with the dashboard's test in grafana.cmake.
add_library(corenoise_prometheus_contract STATIC ${CMAKE_CURRENT_LIST_DIR}/prometheus_contract.cpp)
target_include_directories(corenoise_prometheus_contract PUBLIC ${CMAKE_CURRENT_LIST_DIR})
add_executable(corenoise_prometheus_tests ${CMAKE_CURRENT_LIST_DIR}/prometheus_rules_test.cpp)
target_link_libraries(corenoise_prometheus_tests PRIVATE corenoise_prometheus_contract GTest::gtest_main)
target_compile_definitions(corenoise_prometheus_tests PRIVATE
  CORENOISE_METRICS_MD="${PROJECT_SOURCE_DIR}/docs/metrics.md"
  CORENOISE_RULES="${CORENOISE_PROMETHEUS_DIR}/corenoise.rules.yml"
  CORENOISE_RULE_TESTS="${CORENOISE_PROMETHEUS_DIR}/corenoise.rules.test.yml"
  CORENOISE_RULE_LONG_TESTS="${CORENOISE_PROMETHEUS_DIR}/corenoise.rules.long.test.yml")
gtest_discover_tests(corenoise_prometheus_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS deploy)

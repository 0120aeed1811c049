# deploy/grafana: the dashboard parses, its queries are valid PromQL (through
# promtool, see prometheus.cmake, included first) and every metric it uses is
# in docs/metrics.md or a recording rule of deploy/prometheus/corenoise.rules.yml.
# Needs corenoise_prometheus_contract and CORENOISE_PROMTOOL from prometheus.cmake.
find_program(CORENOISE_PROMTOOL promtool)  # cached by prometheus.cmake
add_executable(corenoise_grafana_tests ${CMAKE_CURRENT_LIST_DIR}/grafana_dashboard_test.cpp)
target_link_libraries(corenoise_grafana_tests PRIVATE
  corenoise_prometheus_contract GTest::gtest_main nlohmann_json::nlohmann_json)
target_compile_definitions(corenoise_grafana_tests PRIVATE
  CORENOISE_DASHBOARD="${PROJECT_SOURCE_DIR}/deploy/grafana/corenoise.json"
  CORENOISE_METRICS_MD="${PROJECT_SOURCE_DIR}/docs/metrics.md"
  CORENOISE_RULES="${PROJECT_SOURCE_DIR}/deploy/prometheus/corenoise.rules.yml"
  # Without promtool the bare name runs and QueriesAreValidPromQL fails.
  PROMTOOL_BIN="$<IF:$<BOOL:${CORENOISE_PROMTOOL}>,${CORENOISE_PROMTOOL},promtool>")
gtest_discover_tests(corenoise_grafana_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS deploy)

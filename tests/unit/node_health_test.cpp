#include "collector/cluster/node_health.h"

#include <gtest/gtest.h>

namespace corenoise {
namespace {

ClusterReport one_node(CoreState state) {
  ClusterReport report;
  ClusterNode node;
  node.index = 0;
  node.name = "cn001";
  node.summary.probed_cores = 120;
  node.summary.max_expected_slowdown = 1.6;
  node.summary.median_expected_slowdown = 1.0;
  node.summary.states[static_cast<std::size_t>(CoreState::ok)] = 119;
  node.summary.states[static_cast<std::size_t>(state)] = 1;
  report.nodes.push_back(node);
  return report;
}

// A core 1.6× slower drains its node once confirmed; a one-off that the
// re-measurement did not bear out (transient) does not.
TEST(DrainPolicy, OnlyAConfirmedSlowCoreDrainsItsNode) {
  const auto confirmed = drain_commands(one_node(CoreState::noisy));
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_NE(confirmed[0].find("nodename=cn001 state=drain"), std::string::npos) << confirmed[0];
  EXPECT_TRUE(drain_commands(one_node(CoreState::transient)).empty());
}

// The sweep's exit code: a confirmed unhealthy core or an outlier node makes
// a node unhealthy; a transient core does not.
TEST(NodeHealth, ConfirmedCoresAndOutliersMakeANodeUnhealthy) {
  EXPECT_EQ(unhealthy_cores(one_node(CoreState::noisy).nodes[0].summary), 1u);
  EXPECT_FALSE(is_healthy(one_node(CoreState::noisy).nodes[0]));
  EXPECT_EQ(unhealthy_cores(one_node(CoreState::transient).nodes[0].summary), 0u);
  EXPECT_TRUE(is_healthy(one_node(CoreState::transient).nodes[0]));
  ClusterNode outlier = one_node(CoreState::ok).nodes[0];
  outlier.outlier = true;
  EXPECT_FALSE(is_healthy(outlier));
}

}  // namespace
}  // namespace corenoise

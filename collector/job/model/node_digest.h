// What a node's first rank says of its node when rank 0 does not ask for
// every record (job_selection.h): its host, the other processes on its
// CPUs and its corenoised's verdicts (what the first rank's record carries
// in a smaller job), its ranks' lateness row (the latest per column,
// reduced on the node), and the configuration findings over the node's
// records and their call sites merged. Each node's first rank receives
// its node's records (record_collection.h) and sends rank 0 this digest;
// rank 0 merges the nodes' digests, so that a finding on all 3,840 ranks
// still lists the 3,840 ranks. What rank 0 holds grows by a digest per
// node.
//
// Pure, like job_report.h; the wire form is JSON, read as untrusted.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "collector/job/model/job_findings.h"
#include "collector/job/model/rank_record.h"

namespace corenoise {

struct NodeDigest {
  std::string host;
  std::vector<RankRecord::Culprit> culprits;                // RankRecord::node_culprits
  std::vector<RankRecord::InterruptLine> interrupts;        // RankRecord::node_interrupts
  std::vector<RankRecord::TracedCulprit> traced;            // RankRecord::node_traced
  std::optional<std::map<unsigned, DaemonVerdict>> daemon;  // RankRecord::node_daemon
  std::vector<float> lateness;          // per column, its latest rank's lateness
  std::vector<JobFinding> findings;     // job_findings() of the node's records
  std::vector<RankRecord::Site> sites;  // by call and site: most calls, waits summed, longest
};

// `first`: the node's first rank's record (its host and node view);
// `node_records`: every record of the node that came, the first's among them.
NodeDigest node_digest(const RankRecord& first, const std::vector<RankRecord>& node_records,
                       std::vector<float> lateness);

// Call sites by call and site over several ranks' or nodes' lists: the
// most calls any made, the waits summed, the longest single wait; in
// order of first appearance.
std::vector<RankRecord::Site> merged_sites(
    const std::vector<const std::vector<RankRecord::Site>*>& lists);

nlohmann::json to_wire(const NodeDigest& digest);
NodeDigest digest_from_wire(const nlohmann::json& wire);  // throws nlohmann's errors

}  // namespace corenoise

// What a node's first rank says of all its node's ranks when rank 0 does
// not ask for every record (job_selection.h): the configuration findings
// over the node's records and their call sites merged. Each node's first
// rank receives its node's records (record_collection.h) and sends rank 0
// this digest inside its own record; rank 0 merges the nodes' digests, so
// that a finding on all 3,840 ranks still lists the 3,840 ranks. What
// rank 0 holds grows by a digest per node.
//
// Pure, like job_report.h; the wire form is JSON, read as untrusted.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "collector/job/model/job_findings.h"
#include "collector/job/model/rank_record.h"

namespace corenoise {

struct NodeDigest {
  std::vector<JobFinding> findings;     // job_findings() of the node's records
  std::vector<RankRecord::Site> sites;  // by call and site: most calls, waits summed, longest
};

NodeDigest node_digest(const std::vector<RankRecord>& node_records);

// Call sites by call and site over several ranks' or nodes' lists: the
// most calls any made, the waits summed, the longest single wait; in
// order of first appearance.
std::vector<RankRecord::Site> merged_sites(
    const std::vector<const std::vector<RankRecord::Site>*>& lists);

nlohmann::json to_wire(const NodeDigest& digest);
NodeDigest digest_from_wire(const nlohmann::json& wire);  // throws nlohmann's errors

}  // namespace corenoise

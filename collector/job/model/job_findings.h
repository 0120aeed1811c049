// Configuration findings: what makes identical ranks unequal before the
// first step, and is visible without timing anything: ranks that run more
// busy threads than they have CPUs, ranks of a node that share CPUs or are
// not bound at all, thread-pool variables left unset while the library that
// reads them is mapped, and XLA_FLAGS words that XLA drops. One finding
// per kind, over every rank it concerns, so that a mistake made on all
// 3,840 ranks is one line, not 3,840.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collector/job/model/rank_record.h"

namespace corenoise {

struct JobFinding {
  std::string kind;                // see job_findings.cpp's kinds
  std::vector<int> ranks;          // the ranks it concerns, ascending
  std::vector<std::string> nodes;  // their hosts, in order of first rank
  std::string evidence;            // what was seen, with figures (at most a few examples)
  std::string fix;
  // What evidence is made of, so that findings merge (merge_findings):
  // what the examples show, the first few examples, how many there were.
  std::string intro;
  std::vector<std::string> examples;
  std::size_t examples_total = 0;
};

// The findings over the records that carry a configuration (records from
// spill files carry none, and give none).
std::vector<JobFinding> job_findings(const std::vector<RankRecord>& records);

// One finding per kind from the findings of several nodes' records (each
// node's first rank's job_findings, node_digest.h): their ranks together
// (ascending), their nodes and the first few examples in the order of the
// nodes given, all examples counted. The same ranks and counts as
// job_findings() over every record; the nodes and examples differ in
// order where ranks are placed round-robin over nodes, and an example
// that spans nodes (XLA_FLAGS's words, the same on every rank) is given
// per node.
std::vector<JobFinding> merge_findings(const std::vector<std::vector<JobFinding>>& per_node);

}  // namespace corenoise

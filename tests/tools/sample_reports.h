// Made-up reports of each kind, the same at every call: the sample pages
// (tests/tools/render_sample_report.cpp) and the golden files
// (tests/golden/) are drawn from them.
//
// The sweep holds one noisy core (node 2, cpu 5), one throttled node (node
// 6), one contended core, one skipped core and a node name with markup in
// it, so every kind of cell and every escape shows. The job is what rank 0
// holds at MPI_Finalize (facts and every rank's record, before any report
// is made of them): eight ranks on two nodes, three of them late for
// different reasons, with culprits, the daemon's verdicts, call sites,
// exchanges and a thread name that is not UTF-8.
#pragma once

#include <vector>

#include "collector/cluster/cluster_report.h"
#include "collector/job/model/job_report.h"
#include "tests/tools/sample_causes.h"

namespace corenoise {

ClusterReport sample_sweep(unsigned nodes = 8, unsigned cores = 16);

struct SampleJob {
  JobFacts facts;
  std::vector<RankRecord> records;
};
SampleJob sample_job();

}  // namespace corenoise

// `corenoise sweep --rank-per-core`: one rank per core, each probing the
// core it is bound to, as an application launched with `--bind-to core`
// runs — the layout of DESIGN.md's story, with the MPI library's own
// threads and each rank's memory placement where the job has them.
//
// The node's leader directs: it tells the node's ranks when each round
// starts, takes part in it with its own core, and gathers every rank's raw
// samples to judge the node's cores together (as one process probing all of
// them would). The ranks pace one another through a segment of shared
// memory (SharedRound): in the isolated round they take turns sample by
// sample, in the concurrent one they meet at one spin barrier per sample.
// Where the node traces, the leader owns its tracefs instance and each rank
// attaches to it for its own core (trace_source.h), matching its detours
// itself; the culprits travel with its samples.
//
// Not pure: it runs probe rounds and talks MPI through the MpiEnvironment.
// Threading: the MpiEnvironment's, each rank's main thread only (the
// probes' own threads are the Runner's).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collector/mpi/mpi_environment.h"
#include "probe/confirmation.h"
#include "probe/runner.h"
#include "probe/settings.h"
#include "probe/topology.h"
#include "probe/trace/trace_source.h"

namespace corenoise {

// The CPU a rank probes, from the PUs it may use (usable() ones): bound
// within one core, that core's first PU; otherwise (unbound, or bound to
// several cores) the first PU of the `node_rank`-th such core, so that the
// node's ranks spread one per core. Throws std::invalid_argument saying why
// there is none.
unsigned choose_rank_cpu(const std::vector<ProcessingUnit>& pus, int node_rank);

class NodeRanks {
 public:
  // Collective over the node's ranks: each picks its CPU and prepares to
  // probe it; trouble on one rank is gathered to the leader (problem()),
  // never thrown, so that no rank is left waiting.
  NodeRanks(MpiEnvironment& env, const ProbeSettings& settings);
  // The leader releases the other ranks (follow() returns) if it has not.
  ~NodeRanks();
  NodeRanks(const NodeRanks&) = delete;
  NodeRanks& operator=(const NodeRanks&) = delete;

  // Leader: why the node cannot be swept (a rank without a CPU, two ranks on
  // one CPU), naming the ranks; empty if it can.
  const std::string& problem() const { return problem_; }
  // Leader: the node's CPUs, in node-rank order.
  const std::vector<unsigned>& cpus() const { return cpus_; }
  // Leader: what the node's report says of its tracing (trace_status()):
  // "on" where every rank traces its core.
  const std::string& trace_status() const { return trace_status_; }
  // Leader: one round on every rank of the node, starting at `start` (unix
  // seconds); the node's samples in node-rank order. With a confirmation
  // plan, just the ranks on its CPUs take part, in its order, with the
  // confirmation settings and its probes (confirmation.h), and the samples
  // are theirs, in that order.
  RoundSamples run(Mode mode, double start, const ConfirmationPlan* confirming = nullptr);
  // Leader: ends follow() on the other ranks.
  void release();
  // The other ranks: take part in the leader's rounds until released.
  void follow();

 private:
  // This rank's part: participant `index` of `participants`; in a
  // confirmation round (of only some ranks), with the confirmation settings
  // and `confirm_probes`.
  RoundSamples run_own(Mode mode, double start, std::size_t participants, std::size_t index,
                       const std::vector<ProbeKind>* confirm_probes) const;
  // Leader: the node's CPUs from every rank's answer, or problem_.
  void find_cpus(const std::vector<std::vector<std::byte>>& all);
  void set_up_trace();
  void let_go_of_trace();

  MpiEnvironment& env_;
  ProbeSettings settings_;
  std::optional<Runner> runner_;
  std::optional<unsigned> cpu_;
  std::string problem_;
  std::vector<unsigned> cpus_;
  std::unique_ptr<trace::TraceSource> trace_owner_;  // leader: the node's instance
  std::string trace_status_ = "off";
  std::span<std::byte> segment_;
  bool released_ = false;
};

}  // namespace corenoise

#include "collector/cluster/sweep_rank_per_core.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "probe/samples_codec.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

// How each launcher binds a rank per core, for messages.
const std::string kBindRanks =
    "mpiexec.mpich -bind-to core, mpirun.openmpi --bind-to core, srun --cpu-bind=cores";

using nlohmann::json;

std::vector<std::byte> to_bytes(const json& j) {
  const std::string text = j.dump();
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  return {first, first + text.size()};
}

json from_bytes(std::span<const std::byte> bytes) {
  return json::parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

unsigned choose_rank_cpu(const std::vector<ProcessingUnit>& pus, int node_rank) {
  std::vector<const ProcessingUnit*> first_of_core;  // usable cores, topology order
  for (const ProcessingUnit& pu : pus) {
    if (!pu.usable()) continue;
    bool seen = false;
    for (const ProcessingUnit* f : first_of_core) seen = seen || f->core == pu.core;
    if (!seen) first_of_core.push_back(&pu);
  }
  if (first_of_core.empty())
    throw std::invalid_argument("this rank may run on no CPU it can probe");
  if (first_of_core.size() == 1) return first_of_core.front()->cpu;  // bound to one core
  if (node_rank < 0 || static_cast<std::size_t>(node_rank) >= first_of_core.size()) {
    throw std::invalid_argument("unbound rank " + std::to_string(node_rank) + " of a node with " +
                                std::to_string(first_of_core.size()) +
                                " cores: run at most one rank per core, or bind ranks (" +
                                kBindRanks + ")");
  }
  return first_of_core[static_cast<std::size_t>(node_rank)]->cpu;
}

NodeRanks::NodeRanks(MpiEnvironment& env, const ProbeSettings& settings)
    : env_(env), settings_(settings) {
  json mine;
  try {
    const Topology topology = Topology::load("native");
    cpu_ = choose_rank_cpu(topology.pus(), env.node_rank());
    runner_.emplace(settings_, topology);
    mine["cpu"] = *cpu_;
  } catch (const std::exception& e) {
    mine["error"] = e.what();
  }
  const auto all = env.gather_node_blobs(to_bytes(mine));
  segment_ = env.node_shared_memory(shared_round_bytes(static_cast<std::size_t>(env.node_size())));
  if (env.is_leader()) find_cpus(all);
  set_up_trace();
}

void NodeRanks::find_cpus(const std::vector<std::vector<std::byte>>& all) {
  std::map<unsigned, std::size_t> rank_of_cpu;
  for (std::size_t rank = 0; rank < all.size(); ++rank) {
    const json theirs = from_bytes(all[rank]);
    if (theirs.contains("error")) {
      problem_ =
          "rank " + std::to_string(rank) + " of the node: " + theirs["error"].get<std::string>();
      return;
    }
    const unsigned cpu = theirs["cpu"].get<unsigned>();
    const auto [other, fresh] = rank_of_cpu.emplace(cpu, rank);
    if (!fresh) {
      problem_ = "ranks " + std::to_string(other->second) + " and " + std::to_string(rank) +
                 " of the node would both probe CPU " + std::to_string(cpu) +
                 " (bound to the same core?): run one rank per core (" + kBindRanks + ")";
      return;
    }
    cpus_.push_back(cpu);
  }
}

// Collective: the leader opens one trace for the node's CPUs, and each rank
// attaches to it for its own (trace_source.h, attach_trace_source).
void NodeRanks::set_up_trace() {
  std::vector<std::byte> order;
  if (env_.is_leader()) {
    std::string instance, why_not;
    if (problem_.empty()) {
      try {
        trace_owner_ = trace::open_trace_source(settings_.trace, cpus_, &why_not);
        if (trace_owner_) instance = trace_owner_->instance_name();
      } catch (const std::exception& e) {
        problem_ = e.what();  // --trace on, and the node cannot trace
      }
    }
    trace_status_ = trace::trace_status(settings_.trace, trace_owner_ != nullptr, why_not);
    order = to_bytes(json{{"instance", instance}});
  }
  env_.broadcast_node(order);
  const std::string instance = from_bytes(order).at("instance").get<std::string>();
  json attached = json::object();
  if (!instance.empty() && runner_ && cpu_) {
    try {
      runner_->set_trace(trace::attach_trace_source(instance, *cpu_));
    } catch (const std::exception& e) {
      attached["error"] = e.what();
    }
  }
  const auto answers = env_.gather_node_blobs(to_bytes(attached));
  // A rank that could not attach would leave its core untraced beside
  // traced ones: the node traces whole or not at all, and says which rank
  // could not and why.
  std::vector<std::byte> verdict;
  if (env_.is_leader()) {
    bool whole = true;
    for (std::size_t rank = 0; rank < answers.size() && whole; ++rank) {
      const json answer = from_bytes(answers[rank]);
      if (!answer.contains("error")) continue;
      whole = false;
      const std::string why =
          "rank " + std::to_string(rank) + " of the node: " + answer["error"].get<std::string>();
      trace_status_ = "unavailable: " + why;
      if (settings_.trace == trace::TraceMode::on && problem_.empty())
        problem_ = "--trace on: " + why;
    }
    verdict = to_bytes(json{{"traced", whole}});
  }
  env_.broadcast_node(verdict);
  if (!from_bytes(verdict).at("traced").get<bool>()) let_go_of_trace();
}

// Collective: every rank drops its attached source, and only then does the
// leader remove the instance (an open file of it keeps the kernel from
// removing it).
void NodeRanks::let_go_of_trace() {
  if (runner_) runner_->set_trace(nullptr);
  env_.gather_node_blobs({});
  trace_owner_.reset();
}

NodeRanks::~NodeRanks() {
  if (!env_.is_leader() || released_) return;
  try {
    release();
  } catch (const std::exception&) {
    // MPI is failing: the command's watchdog ends the job.
  }
}

void NodeRanks::release() {
  released_ = true;
  std::vector<std::byte> stop = to_bytes(json{{"stop", true}});
  env_.broadcast_node(stop);
  let_go_of_trace();
}

RoundSamples NodeRanks::run_own(Mode mode, double start, std::size_t participants,
                                std::size_t index,
                                const std::vector<ProbeKind>* confirm_probes) const {
  const SharedRound shared{segment_.data(), participants, index};
  sleep_until_unix_seconds(start);
  if (!runner_ || !cpu_) throw std::logic_error("NodeRanks: a rank without a CPU was asked to run");
  if (confirm_probes == nullptr) return runner_->run(mode, {*cpu_}, {}, nullptr, &shared);
  // A confirmation round: a longer look, at what the suspects' tests read.
  return runner_->for_confirmation(*confirm_probes).run(mode, {*cpu_}, {}, nullptr, &shared);
}

namespace {

// This rank's place among a round's participants: its node rank in a
// round of every rank, its position in `only` otherwise (none: it sits out).
std::optional<std::size_t> participant_index(const json& order, std::optional<unsigned> cpu,
                                             std::size_t node_rank) {
  if (!order.contains("only")) return node_rank;
  const auto only = order["only"].get<std::vector<unsigned>>();
  const auto at = cpu ? std::find(only.begin(), only.end(), *cpu) : only.end();
  if (at == only.end()) return std::nullopt;
  return static_cast<std::size_t>(at - only.begin());
}

std::size_t participant_count(const json& order, std::size_t node_size) {
  return order.contains("only") ? order["only"].size() : node_size;
}

// A confirmation round's probes, sent as ProbeKind values.
json probe_codes(const std::vector<ProbeKind>& probes) {
  json codes = json::array();
  for (ProbeKind p : probes) codes.push_back(static_cast<int>(p));
  return codes;
}
std::vector<ProbeKind> probes_from_codes(const json& codes) {
  std::vector<ProbeKind> probes;
  for (const auto& code : codes) probes.push_back(static_cast<ProbeKind>(code.get<int>()));
  return probes;
}

}  // namespace

namespace {

// Only the participants' samples, in the order asked: the ranks that sat
// out sent empty records.
std::vector<CpuSamples> taking_part(std::vector<CpuSamples> all,
                                    const std::vector<unsigned>& cpus) {
  std::vector<CpuSamples> out;
  for (unsigned cpu : cpus) {
    for (auto& s : all) {
      if (s.cpu == cpu && (!s.no_samples() || !s.error.empty())) {
        out.push_back(std::move(s));
        break;
      }
    }
  }
  return out;
}

}  // namespace

RoundSamples NodeRanks::run(Mode mode, double start, const ConfirmationPlan* confirming) {
  json order = {{"mode", to_string(mode)}, {"start", start}};
  const std::vector<unsigned>* only = confirming ? &confirming->cpus : nullptr;
  if (confirming) {
    order["only"] = confirming->cpus;
    order["probes"] = probe_codes(confirming->probes);
  }
  const std::size_t participants =
      participant_count(order, static_cast<std::size_t>(env_.node_size()));
  // The segment is set up before anyone hears of the round, and every rank
  // finished the previous one (it sent its samples) before this.
  prepare_shared_round(segment_.data(), participants);
  std::vector<std::byte> bytes = to_bytes(order);
  env_.broadcast_node(bytes);
  const auto index = participant_index(order, cpu_, static_cast<std::size_t>(env_.node_rank()));
  // A concurrent round is recorded whole by the owner of the node's trace,
  // from its start (not before: a full buffer drops the newest events, and
  // the wait is nobody's window) until every rank has sent its samples,
  // or the round failed here. Taking part, the leader's own thread holds
  // the round's first barrier, so no window opens before this; sitting out
  // (a confirmation of other cores), it switches recording on at once.
  struct WholeRound {
    trace::TraceSource* owner = nullptr;
    ~WholeRound() {
      if (owner != nullptr) owner->round_ends();
    }
  } whole_round;
  if (trace_owner_ && mode == Mode::concurrent) {
    if (index) sleep_until_unix_seconds(start);
    trace_owner_->round_begins(only != nullptr ? *only : cpus_);
    whole_round.owner = trace_owner_.get();
  }
  RoundSamples round;
  round.mode = mode;
  if (index) {
    // A failure here is the leader's core's, sent like any rank's (follow()):
    // thrown past the gather, it would leave the other ranks waiting in it.
    try {
      round =
          run_own(mode, start, participants, *index, confirming ? &confirming->probes : nullptr);
    } catch (const std::exception& e) {
      round.cpus.assign(1, CpuSamples{});
      round.cpus[0].cpu = cpu_.value_or(0);
      round.cpus[0].error = e.what();
    }
  } else {
    round.cpus.emplace_back();  // sits out: an empty record
  }
  const auto all = env_.gather_node_blobs(encode_samples(round.cpus.at(0)));
  if (whole_round.owner != nullptr) std::exchange(whole_round.owner, nullptr)->round_ends();
  round.cpus.clear();
  for (const auto& blob : all) round.cpus.push_back(decode_samples(blob));
  if (only != nullptr) round.cpus = taking_part(std::move(round.cpus), *only);
  return round;
}

void NodeRanks::follow() {
  for (;;) {
    std::vector<std::byte> order;
    env_.broadcast_node(order);
    const json j = from_bytes(order);
    if (j.value("stop", false)) {
      let_go_of_trace();
      return;
    }
    const Mode mode =
        j.at("mode").get<std::string>() == "isolated" ? Mode::isolated : Mode::concurrent;
    CpuSamples samples;
    try {
      const auto index = participant_index(j, cpu_, static_cast<std::size_t>(env_.node_rank()));
      if (index) {
        const std::vector<ProbeKind> probes =
            j.contains("probes") ? probes_from_codes(j["probes"]) : std::vector<ProbeKind>{};
        RoundSamples round =
            run_own(mode, j.at("start").get<double>(),
                    participant_count(j, static_cast<std::size_t>(env_.node_size())), *index,
                    j.contains("only") ? &probes : nullptr);
        samples = std::move(round.cpus.at(0));
      }
    } catch (const std::exception& e) {
      samples.cpu = cpu_.value_or(0);
      samples.error = e.what();
    }
    env_.gather_node_blobs(encode_samples(samples));
  }
}

}  // namespace corenoise

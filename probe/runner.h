// The round runner: runs the selected probes on each selected CPU, either
// one core at a time (isolated: the core's own speed) or all at once behind
// a spin barrier (concurrent: the all-core behaviour a full MPI job sees).
//
// oslat's rules: each probe thread pins first, then allocates (NUMA-local
// memory), warms up, and records into preallocated vectors; every other
// thread of the process moves off a CPU while that CPU is measured.
// In isolated mode all probe threads exist at once and take turns, one
// sample at a time (turn_taking.h), so drift reaches every core alike.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/detour_probe.h"
#include "probe/probe_kinds.h"
#include "probe/settings.h"
#include "probe/topology.h"
#include "probe/trace/culprit_matcher.h"
#include "probe/trace/trace_source.h"
#include "probe/work.h"

namespace corenoise {

// Raw measurements of one CPU in one mode; empty vectors for probes not run.
struct CpuSamples {
  unsigned cpu = 0;
  std::vector<double> matmul_seconds;          // one per sample: `reps` products
  std::vector<double> matmul_product_seconds;  // every product of every sample
  // One per sample of each kind the runner drives through its ProbeKernel
  // (probe_kinds.h: clock hertz, stream triad seconds, …).
  PerKind<std::vector<double>> samples;
  std::vector<DetourResult> detours;  // one per sample window
  // Where the runner traces (Runner::set_trace): what each detour's time
  // was charged to, over all windows; empty where untraced. The spans and
  // the probe thread's id are the matcher's input, freed once matched.
  std::optional<trace::Attribution> culprits;
  std::vector<trace::Detour> detour_spans;
  int probe_tid = 0;
  PerKind<KernelWork> work;  // of one sample's run, per kind
  std::string error;         // why this CPU could not be measured; empty on success
  // Its probe thread was still in a sample when the round gave up on it and
  // was left behind (detached); `error` says which deadline it missed.
  bool abandoned = false;

  // No sample of any probe.
  bool no_samples() const;
};

struct RoundSamples {
  Mode mode = Mode::isolated;
  Isa isa = Isa::baseline;
  double started_unix_seconds = 0;
  double duration_seconds = 0;
  bool cancelled = false;
  // The round's deadline passed: the CPUs whose probe thread was still in a
  // sample are `abandoned` (with an error saying so); the others keep the
  // samples they took.
  bool overran = false;
  std::vector<CpuSamples> cpus;  // in the order requested
};

// A round measured by several processes of one node together, one rank per
// core (`corenoise sweep --rank-per-core`): their probe threads pace one
// another — take turns in isolated mode, meet at the spin barrier in
// concurrent mode — through `memory`, a segment every process maps at some
// address. This process's CPUs are participants [first, first + cpus) of
// `participants`. Before each round exactly one process calls
// prepare_shared_round, and no process starts the round before it returns
// (a barrier of the node's ranks).
struct SharedRound {
  void* memory = nullptr;  // shared_round_bytes(participants), 8-byte aligned
  std::size_t participants = 0;
  std::size_t first = 0;
};
std::size_t shared_round_bytes(std::size_t participants);
void prepare_shared_round(void* memory, std::size_t participants);

class Runner {
 public:
  // Called with (steps done, steps): in isolated mode after each step (one
  // sample of one probe on every CPU, in turn), from the probe thread that
  // finished it; in concurrent mode once at the end.
  using Progress = std::function<void(std::size_t done, std::size_t total)>;

  // Throws std::invalid_argument if the settings name an ISA this CPU lacks.
  Runner(ProbeSettings settings, Topology topology);

  // Measures `cpus` (OS indexes of usable PUs of the topology) in `mode`.
  // `cancel`, if set, stops the round between samples; the result then has
  // cancelled = true and partial samples. Not thread-safe: one round at a time.
  // `shared`, if set, paces these CPUs with other processes' (SharedRound).
  //
  // `deadline_seconds` (> 0; not with `shared`) bounds the round: once it
  // has passed, every probe thread stops at its next check — between
  // samples, or while waiting for its turn or at the barrier — and the
  // round returns with overran = true. A sample itself is never
  // interrupted: a thread still in one kAbandonGraceSeconds after the
  // deadline (or after `cancel`, which a probe thread notices between
  // samples, or this call within a second) is abandoned: its CPU gets the
  // error "overran its deadline", the thread is left to finish on its own
  // (it owns everything it touches), and until it has, later rounds skip
  // that CPU with a cause saying so instead of starting a second thread
  // there. Without a deadline or cancel, it waits for every thread.
  RoundSamples run(Mode mode, const std::vector<unsigned>& cpus, const Progress& progress = {},
                   const std::atomic<bool>* cancel = nullptr, const SharedRound* shared = nullptr,
                   double deadline_seconds = 0) const;

  // How long a probe thread may take to notice the deadline or a cancel.
  static constexpr double kAbandonGraceSeconds = 0.5;

  // This runner for a confirmation round: the same topology and ISA, with
  // ProbeSettings::for_confirmation(needed).
  Runner for_confirmation(const std::vector<ProbeKind>& needed) const;

  const ProbeSettings& settings() const { return settings_; }
  Isa isa() const { return isa_; }

  // Traces the detour windows of later rounds (and of their confirmations)
  // through `source`, which must cover their CPUs; nullptr stops tracing.
  void set_trace(std::shared_ptr<trace::TraceSource> source) { trace_ = std::move(source); }
  bool traced() const { return trace_ != nullptr; }

 private:
  ProbeSettings settings_;
  Topology topology_;
  Isa isa_;
  std::shared_ptr<trace::TraceSource> trace_;
};

}  // namespace corenoise

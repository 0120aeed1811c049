#include "probe/runner.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "probe/detour_windows.h"
#include "probe/matmul.h"
#include "probe/pinning.h"
#include "probe/spin_barrier.h"
#include "probe/trace/culprit_names.h"
#include "probe/tsc.h"
#include "probe/turn_taking.h"
#include "probe/units.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

template <typename Fn>
double time_seconds(Fn&& fn) {
  const auto t0 = read_tsc();
  fn();
  return tsc_to_seconds(read_tsc() - t0);
}

// Everything one probe thread needs, built after pinning.
struct CpuKernels {
  std::unique_ptr<MatmulKernel> matmul;
  std::unique_ptr<DetourProbe> detour;
  PerKind<std::unique_ptr<ProbeKernel>> driven;  // the descriptor's kernels (make_kernel)
};

// How the probe threads of a round take their steps (one sample of one
// probe): all together behind a spin barrier (concurrent), or one at a time
// in turn (isolated, interleaved).
class Pacing {
 public:
  virtual ~Pacing() = default;
  virtual void prepared(std::size_t /*worker*/) {}
  // False if the round is cancelled (for every worker alike) or over.
  virtual bool before_step(std::size_t worker) = 0;
  // TSC ticks between being asked to start this step and getting the CPU.
  virtual std::uint64_t start_lag() const { return 0; }
  virtual void after_step(std::size_t /*worker*/) {}
};

// What the probe threads of one round share, owned jointly by them and by
// Runner::run: a thread abandoned past the deadline may run on after run()
// has returned (a CPU it cannot get back), so it must touch nothing of the
// caller's or of the Runner's (which a reload may replace) — hence copies of
// the settings and PUs. The caller's objects (ProcessOffCpus, the progress
// callback) are reached only under `mutex` while !over.
struct RoundState {
  RoundState(ProbeSettings probe_settings, Isa round_isa,
             std::shared_ptr<trace::TraceSource> trace_source)
      : settings(std::move(probe_settings)),
        isa(round_isa),
        counters(settings.proc_root),
        trace(std::move(trace_source)) {}

  const ProbeSettings settings;
  const Isa isa;
  const ProcCounterReader counters;
  const std::shared_ptr<trace::TraceSource> trace;  // nullptr: untraced
  std::vector<ProcessingUnit> pus;                  // one per worker
  std::vector<CpuSamples> samples;  // one per worker, read by run() once that worker is done
  std::unique_ptr<Pacing> pacing;
  std::atomic<bool> stop{false};    // cancelled or past the deadline: stop at the next check
  std::atomic<bool> broken{false};  // the barrier's waiters leave without their peers

  std::mutex mutex;
  std::condition_variable finished;  // a worker is done, or noticed a cancel
  bool over = false;                 // run() has returned: `off`, `progress` and `cancel` are gone
  ProcessOffCpus* off = nullptr;
  Runner::Progress progress;
  const std::atomic<bool>* cancel = nullptr;  // the caller's
  bool one_at_a_time = false;                 // isolated: the workers take turns
  std::vector<char> done;                     // per worker: its thread has left the round
  std::size_t running = 0;

  // Called by a worker between samples: the caller's cancel becomes `stop`,
  // the one flag the pacings watch, and wakes run() to time the grace.
  // (run() itself only wakes once a second to look: a thread waking every
  // few milliseconds would be noise on the CPUs a concurrent round measures.)
  void notice_cancel() {
    if (stop.load(std::memory_order_relaxed)) return;
    std::lock_guard lock(mutex);
    if (over || cancel == nullptr || !cancel->load()) return;
    stop = true;
    finished.notify_all();
  }
};

// Where a SharedRound's segment keeps each pacing's state.
constexpr std::size_t kBarrierOffset = 0;
constexpr std::size_t kTurnsOffset = 64;  // its own cache line
static_assert(sizeof(SpinBarrier::State) <= kTurnsOffset);

std::byte* shared_at(const SharedRound& shared, std::size_t offset) {
  return static_cast<std::byte*>(shared.memory) + offset;
}

class Together final : public Pacing {
 public:
  // Across processes (`shared`) the barrier is never broken: the other
  // processes' threads would wait for ours for ever.
  Together(RoundState& state, std::size_t workers, const SharedRound* shared)
      : barrier_(shared != nullptr ? shared->participants : workers, &state.stop,
                 shared != nullptr
                     ? reinterpret_cast<SpinBarrier::State*>(shared_at(*shared, kBarrierOffset))
                     : nullptr,
                 shared != nullptr ? nullptr : &state.broken) {}
  bool before_step(std::size_t) override { return barrier_.arrive_and_wait(); }

 private:
  SpinBarrier barrier_;
};

class InTurn final : public Pacing {
 public:
  // Before each step, every other thread of the process (state.off) leaves
  // the CPU about to be measured.
  // With `shared`, the turns go round every process's CPUs; worker i of this
  // process is participant first + i.
  InTurn(RoundState& state, std::vector<unsigned> cpus, std::size_t steps,
         const SharedRound* shared)
      : state_(state),
        cpus_(std::move(cpus)),
        turns_(shared != nullptr ? std::make_unique<TurnTaking>(shared_at(*shared, kTurnsOffset),
                                                                shared->participants, &state.stop)
                                 : std::make_unique<TurnTaking>(cpus_.size(), &state.stop)),
        first_(shared != nullptr ? shared->first : 0),
        participants_(shared != nullptr ? shared->participants : cpus_.size()),
        steps_(steps) {}
  void prepared(std::size_t) override { turns_->prepared(); }
  bool before_step(std::size_t worker) override {
    if (!turns_->wait_turn(first_ + worker)) return false;
    const std::uint64_t woke = read_tsc();
    const std::uint64_t asked = turns_->handed_over();
    lag_ = asked != 0 && asked < woke ? woke - asked : 0;
    std::lock_guard lock(state_.mutex);
    if (state_.over) return false;
    state_.off->move_off({cpus_[worker]});
    return true;
  }
  // Read by the worker whose turn it is, which wrote it: one at a time.
  std::uint64_t start_lag() const override { return lag_; }
  void after_step(std::size_t worker) override {
    {
      std::lock_guard lock(state_.mutex);
      // The other threads may use this CPU again until the next turn moves
      // them off its CPU: if that next CPU is one they cannot get (a
      // real-time thread holds it), they must not be confined to it — on
      // two CPUs that would starve the event loop and the thread that
      // enforces the deadline.
      if (!state_.over) state_.off->move_off({});
      // The last CPU of a step reports it, between two measurements.
      if (first_ + worker + 1 == participants_) {
        ++done_;
        if (!state_.over && state_.progress) state_.progress(done_, steps_);
      }
    }
    turns_->pass(first_ + worker);
  }

 private:
  RoundState& state_;
  std::vector<unsigned> cpus_;
  std::unique_ptr<TurnTaking> turns_;
  std::size_t first_;
  std::size_t participants_;
  std::size_t steps_;
  std::size_t done_ = 0;
  std::uint64_t lag_ = 0;
};

class CpuWorker {
 public:
  CpuWorker(std::shared_ptr<RoundState> state, std::size_t index)
      : state_(std::move(state)),
        settings_(state_->settings),
        pu_(state_->pus[index]),
        index_(index),
        out_(state_->samples[index]) {}

  // Never throws: a failure is recorded in out_.error, and the worker still
  // takes every step (measuring nothing), so that no peer waits for it.
  void operator()() {
    take_steps();
    // Free the buffers (up to 64 MiB of triad) before saying done: a thread
    // that has said so is joined without a deadline, so whatever it still
    // does afterwards must be short. (A thread stopped in that munmap
    // hung the round for good: DaemonFaults' concurrent deadline test.)
    kernels_ = CpuKernels{};
    std::vector<std::uint64_t>().swap(detour_windows_);
    std::lock_guard lock(state_->mutex);
    state_->done[index_] = 1;
    --state_->running;
    state_->finished.notify_all();
  }

 private:
  void take_steps() {
    Pacing& pacing = *state_->pacing;
    // "probe-cpuN" in top -H, ps -L and /proc/PID/task/TID/comm: which
    // thread measures which CPU (at most 15 characters: up to CPU 99999).
    const std::string name = "probe-cpu" + std::to_string(pu_.cpu);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    try {
      pin_current_thread(pu_.cpu);
      prepare();
    } catch (const std::exception& e) {
      out_.error = e.what();
    }
    pacing.prepared(index_);
    for (ProbeKind probe : settings_.probes) {
      for (int s = 0; s < settings_.samples; ++s) {
        // In a concurrent round one worker looks, so that they do not all
        // queue for the lock before the barrier.
        if (index_ == 0 || state_->one_at_a_time) state_->notice_cancel();
        if (!pacing.before_step(index_)) return;
        if (out_.error.empty()) measure(probe);
        pacing.after_step(index_);
      }
    }
  }

  void prepare() {
    const auto samples = static_cast<std::size_t>(settings_.samples);
    if (settings_.runs(ProbeKind::matmul)) {
      kernels_.matmul = std::make_unique<MatmulKernel>(settings_.matmul_size, settings_.dtype,
                                                       settings_.reps, state_->isa);
      kernels_.matmul->run();  // warm-up: caches, TLB, and the FPU's power state
      out_.work[ProbeKind::matmul] = kernels_.matmul->work();
      out_.matmul_seconds.reserve(samples);
      out_.matmul_product_seconds.resize(samples * static_cast<std::size_t>(settings_.reps));
    }
    for (const ProbeDescriptor& d : kProbeDescriptors) {
      if (d.make_kernel == nullptr || !settings_.runs(d.kind)) continue;
      auto& kernel = kernels_.driven[d.kind];
      kernel = d.make_kernel(settings_, pu_);
      kernel->sample();  // warm-up
      out_.work[d.kind] = kernel->work();
      out_.samples[d.kind].reserve(samples);
    }
    if (settings_.runs(ProbeKind::detour)) {
      kernels_.detour =
          std::make_unique<DetourProbe>(pu_.cpu, settings_.detour_window_seconds,
                                        settings_.detour_threshold_seconds, state_->counters);
      out_.detours.reserve(samples);
      if (state_->trace) {
        out_.detour_spans.reserve(samples * kSpansPerWindow);
        out_.probe_tid = static_cast<int>(gettid());
      }
      // Isolated: random lengths, so that the windows' phase against
      // periodic noise is random (probe/detour_windows.h). Concurrent
      // windows stay nominal: they run back to back behind the barrier
      // (no lockstep gaps), and unequal ones would make cores wait there.
      if (state_->one_at_a_time) {
        detour_windows_.resize(samples);
        std::mt19937_64 rng(seed());
        draw_detour_windows(detour_windows_, kernels_.detour->nominal_window_ticks(), rng);
      }
    }
  }

  void measure(ProbeKind probe) {
    switch (probe) {
      case ProbeKind::matmul: {
        double* products = out_.matmul_product_seconds.data() +
                           out_.matmul_seconds.size() * static_cast<std::size_t>(settings_.reps);
        out_.matmul_seconds.push_back(time_seconds([&] { kernels_.matmul->run(products); }));
        break;
      }
      case ProbeKind::detour: {
        const std::uint64_t window =
            out_.detours.size() < detour_windows_.size() ? detour_windows_[out_.detours.size()] : 0;
        if (!state_->trace) {
          out_.detours.push_back(kernels_.detour->run(state_->pacing->start_lag(), window));
          break;
        }
        const std::uint64_t traced_from = state_->trace->window_begins(pu_.cpu);
        out_.detours.push_back(kernels_.detour->run(state_->pacing->start_lag(), window,
                                                    &out_.detour_spans, traced_from));
        state_->trace->window_ends(pu_.cpu);
        break;
      }
      default:
        out_.samples[probe].push_back(kernels_.driven[probe]->sample());
        break;
    }
  }

  // Detours kept per window for the matcher: a window of 25 ms with one
  // every 25 us; past that the rest go unmatched (CoreFigures says how much).
  static constexpr std::size_t kSpansPerWindow = 1024;

  // A real random source per thread and round; the TSC where there is none.
  static std::uint64_t seed() {
    try {
      std::random_device device;
      return (std::uint64_t{device()} << 32) ^ device();
    } catch (const std::exception&) {
      return read_tsc();
    }
  }

  std::shared_ptr<RoundState> state_;
  const ProbeSettings& settings_;
  const ProcessingUnit& pu_;
  std::size_t index_;
  CpuSamples& out_;
  CpuKernels kernels_;
  std::vector<std::uint64_t> detour_windows_;  // TSC ticks per sample; empty: nominal
};

// Rounds with an abandoned probe thread that has not finished yet.
std::mutex abandoned_mutex;
std::vector<std::shared_ptr<RoundState>> abandoned_rounds;

// CPUs on which an abandoned probe thread still runs (or waits to).
std::vector<unsigned> cpus_still_abandoned() {
  std::lock_guard registry(abandoned_mutex);
  std::vector<unsigned> cpus;
  std::erase_if(abandoned_rounds, [&](const std::shared_ptr<RoundState>& state) {
    std::lock_guard lock(state->mutex);
    for (std::size_t i = 0; i < state->done.size(); ++i) {
      if (!state->done[i]) cpus.push_back(state->pus[i].cpu);
    }
    return state->running == 0;
  });
  return cpus;
}

// What the CPU's tracer saw during its windows, matched to its detours.
// After the round, on the caller's thread: nothing runs beside a window.
void attribute_detours(trace::TraceSource& source, CpuSamples& out) {
  try {
    const std::vector<trace::Event> events = source.take(out.cpu);
    if (out.detours.empty()) return;  // (the take still empties the buffer)
    trace::Attribution culprits = trace::match_detours(out.detour_spans, events, out.probe_tid);
    trace::resolve_scheduling(culprits);
    trace::convert_to_seconds(culprits, tsc_hertz());
    out.culprits = std::move(culprits);
  } catch (const std::exception&) {
    // Without the trace the cause stays /proc's, as on an untraced node.
  }
  std::vector<trace::Detour>().swap(out.detour_spans);
}

}  // namespace

bool CpuSamples::no_samples() const {
  return matmul_seconds.empty() && detours.empty() &&
         std::all_of(samples.items.begin(), samples.items.end(),
                     [](const std::vector<double>& v) { return v.empty(); });
}

std::size_t shared_round_bytes(std::size_t participants) {
  return kTurnsOffset + TurnTaking::state_bytes(participants);
}

void prepare_shared_round(void* memory, std::size_t participants) {
  SharedRound shared{memory, participants, 0};
  new (shared_at(shared, kBarrierOffset)) SpinBarrier::State;
  TurnTaking::construct_state(shared_at(shared, kTurnsOffset), participants);
}

Runner::Runner(ProbeSettings settings, Topology topology)
    : settings_(std::move(settings)),
      topology_(std::move(topology)),
      isa_(settings_.isa.value_or(best_isa())) {
  if (!isa_supported(isa_)) {
    throw std::invalid_argument(
        "--isa " + std::string(to_string(isa_)) +
        ": this CPU does not support it (best: " + std::string(to_string(best_isa())) + ")");
  }
  tsc_hertz();  // calibrate now, not inside the first probe
}

Runner Runner::for_confirmation(const std::vector<ProbeKind>& needed) const {
  Runner again = *this;
  again.settings_ = settings_.for_confirmation(needed);
  return again;
}

namespace {

void check_shared(const SharedRound* shared, std::size_t cpus, double deadline_seconds) {
  if (shared == nullptr) return;
  if (shared->memory == nullptr || shared->participants == 0 ||
      shared->first + cpus > shared->participants) {
    throw std::invalid_argument("shared round: participants do not cover this process's CPUs");
  }
  // Abandoning a participant would leave the other processes waiting for it.
  if (deadline_seconds > 0)
    throw std::invalid_argument("shared round: no deadline across processes");
}

std::vector<const ProcessingUnit*> pus_of(const Topology& topology,
                                          const std::vector<unsigned>& cpus) {
  std::vector<const ProcessingUnit*> pus;
  for (unsigned cpu : cpus) {
    const ProcessingUnit* pu = topology.find(cpu);
    if (pu == nullptr)
      throw std::invalid_argument("CPU " + std::to_string(cpu) + " is not in the topology");
    pus.push_back(pu);
  }
  return pus;
}

// The CPUs that get a probe thread: all but those whose thread of an
// earlier round is still stuck (they get an error instead of a second one).
struct Workers {
  std::vector<std::size_t> index;  // round.cpus index of each worker
  std::vector<unsigned> cpus;
};
Workers enlist(RoundSamples& round, const std::vector<const ProcessingUnit*>& pus,
               const std::vector<unsigned>& stuck, RoundState& state) {
  Workers workers;
  for (std::size_t i = 0; i < pus.size(); ++i) {
    if (std::find(stuck.begin(), stuck.end(), pus[i]->cpu) != stuck.end()) {
      round.cpus[i].error =
          "its probe thread of an earlier round overran its deadline and has not finished yet";
      continue;
    }
    workers.index.push_back(i);
    workers.cpus.push_back(pus[i]->cpu);
    state.pus.push_back(*pus[i]);
    state.samples.emplace_back().cpu = pus[i]->cpu;
  }
  return workers;
}

using Clock = std::chrono::steady_clock;

// Waits for the workers; past the deadline or on a cancel tells them to
// stop, and gives up on those still in a sample a grace period later.
// Returns which workers finished; sets round.overran.
std::vector<char> wait_for_workers(RoundState& state, RoundSamples& round, Clock::time_point t0,
                                   double deadline_seconds, const std::atomic<bool>* cancel,
                                   bool across_processes) {
  const auto deadline = deadline_seconds > 0
                            ? t0 + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(deadline_seconds))
                            : Clock::time_point::max();
  std::optional<Clock::time_point> give_up;
  std::unique_lock lock(state.mutex);
  while (state.running > 0) {
    // Across processes nobody is abandoned: wait on, looking once a second.
    const auto look = Clock::now() + std::chrono::seconds(1);
    state.finished.wait_until(lock,
                              give_up && !across_processes ? *give_up : std::min(deadline, look));
    const auto now = Clock::now();
    if (!give_up) {
      const bool cancelled = cancel != nullptr && cancel->load();
      if (!cancelled && now < deadline) continue;
      round.overran = !cancelled;
      state.stop = true;
      if (!across_processes) state.broken = true;
      give_up = now + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(Runner::kAbandonGraceSeconds));
    } else if (now >= *give_up && !across_processes) {
      break;
    }
  }
  state.over = true;
  return state.done;
}

// A worker's samples into its CPU's place in the round, or, for a thread
// still in a sample, why that CPU has none (the thread is left behind).
void collect(CpuSamples& out, std::thread& thread, bool finished, CpuSamples& samples,
             const RoundSamples& round, double deadline_seconds, trace::TraceSource* trace) {
  const double grace = Runner::kAbandonGraceSeconds;
  if (!finished) {
    thread.detach();  // it owns its share of the round's state
    out.abandoned = true;
    if (trace != nullptr) trace->window_abandoned(out.cpu);
    out.error =
        round.overran
            ? "overran its deadline of " + plain_seconds_text(deadline_seconds) +
                  " (still in a sample " + plain_seconds_text(grace) + " later; abandoned)"
            : "did not stop within " + plain_seconds_text(grace) + " of the cancel; abandoned";
    return;
  }
  thread.join();
  out = std::move(samples);
  if (trace != nullptr) attribute_detours(*trace, out);
  if (round.overran && out.error.empty() && out.no_samples()) {
    out.error = "the round overran its deadline of " + plain_seconds_text(deadline_seconds) +
                " before this CPU's first sample";
  }
}

}  // namespace

RoundSamples Runner::run(Mode mode, const std::vector<unsigned>& cpus, const Progress& progress,
                         const std::atomic<bool>* cancel, const SharedRound* shared,
                         double deadline_seconds) const {
  check_shared(shared, cpus.size(), deadline_seconds);
  RoundSamples round;
  round.mode = mode;
  round.isa = isa_;
  round.started_unix_seconds = unix_seconds_now();
  const auto t0 = Clock::now();
  const std::vector<const ProcessingUnit*> pus = pus_of(topology_, cpus);
  round.cpus.resize(pus.size());
  for (std::size_t i = 0; i < pus.size(); ++i) round.cpus[i].cpu = pus[i]->cpu;

  auto state = std::make_shared<RoundState>(settings_, isa_, trace_);
  const Workers workers = enlist(
      round, pus, shared != nullptr ? std::vector<unsigned>{} : cpus_still_abandoned(), *state);
  const std::size_t n = workers.cpus.size();
  // Taken before the probe threads exist, so that it moves every thread but
  // theirs.
  std::optional<ProcessOffCpus> off(
      std::in_place, mode == Mode::isolated ? std::vector<unsigned>{} : workers.cpus);
  state->off = &*off;
  state->progress = progress;
  state->cancel = cancel;
  state->one_at_a_time = mode == Mode::isolated;
  if (mode == Mode::isolated) {
    const std::size_t steps = settings_.probes.size() * static_cast<std::size_t>(settings_.samples);
    state->pacing = std::make_unique<InTurn>(*state, workers.cpus, steps, shared);
  } else {
    state->pacing = std::make_unique<Together>(*state, n, shared);
  }
  // Recorded whole where every CPU's windows run at once (TraceSource::round_begins).
  const bool trace_whole_round = trace_ && mode == Mode::concurrent;
  if (trace_whole_round) trace_->round_begins(workers.cpus);
  state->done.assign(n, 0);
  state->running = n;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(CpuWorker(state, i));

  const std::vector<char> finished =
      wait_for_workers(*state, round, t0, deadline_seconds, cancel, shared != nullptr);
  off.reset();  // no worker reaches it any more
  if (trace_whole_round) trace_->round_ends();
  if (progress && mode == Mode::concurrent) progress(1, 1);
  for (std::size_t w = 0; w < n; ++w) {
    collect(round.cpus[workers.index[w]], threads[w], finished[w] != 0, state->samples[w], round,
            deadline_seconds, trace_.get());
  }
  if (std::find(finished.begin(), finished.end(), 0) != finished.end()) {
    std::lock_guard registry(abandoned_mutex);
    abandoned_rounds.push_back(state);
  }
  round.cancelled = cancel != nullptr && cancel->load();
  round.duration_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return round;
}

}  // namespace corenoise

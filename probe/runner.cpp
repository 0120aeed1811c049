#include "probe/runner.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

#include "probe/clock_probe.h"
#include "probe/matmul.h"
#include "probe/pinning.h"
#include "probe/spin_barrier.h"
#include "probe/stream_probe.h"
#include "probe/tsc.h"
#include "probe/turn_taking.h"
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
  std::optional<ClockProbe> clock;
  std::unique_ptr<DetourProbe> detour;
  std::unique_ptr<StreamProbe> stream;
};

// How the probe threads of a round take their steps (one sample of one
// probe): all together behind a spin barrier (concurrent), or one at a time
// in turn (isolated, interleaved).
class Pacing {
 public:
  virtual ~Pacing() = default;
  virtual void prepared(std::size_t /*worker*/) {}
  // False if the round is cancelled (for every worker alike).
  virtual bool before_step(std::size_t worker) = 0;
  // TSC ticks between being asked to start this step and getting the CPU.
  virtual std::uint64_t start_lag() const { return 0; }
  virtual void after_step(std::size_t /*worker*/) {}
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
  Together(std::size_t workers, const std::atomic<bool>* cancel, const SharedRound* shared)
      : barrier_(shared != nullptr ? shared->participants : workers, cancel,
                 shared != nullptr
                     ? reinterpret_cast<SpinBarrier::State*>(shared_at(*shared, kBarrierOffset))
                     : nullptr) {}
  bool before_step(std::size_t) override { return barrier_.arrive_and_wait(); }

 private:
  SpinBarrier barrier_;
};

class InTurn final : public Pacing {
 public:
  // `off` holds every other thread of the process; before each step, they
  // leave the CPU about to be measured.
  // With `shared`, the turns go round every process's CPUs; worker i of this
  // process is participant first + i.
  InTurn(std::vector<unsigned> cpus, const std::atomic<bool>* cancel, ProcessOffCpus& off,
         std::size_t steps, const Runner::Progress& progress, const SharedRound* shared)
      : cpus_(std::move(cpus)),
        turns_(shared != nullptr ? std::make_unique<TurnTaking>(shared_at(*shared, kTurnsOffset),
                                                                shared->participants, cancel)
                                 : std::make_unique<TurnTaking>(cpus_.size(), cancel)),
        first_(shared != nullptr ? shared->first : 0),
        participants_(shared != nullptr ? shared->participants : cpus_.size()),
        off_(off),
        steps_(steps),
        progress_(progress) {}
  void prepared(std::size_t) override { turns_->prepared(); }
  bool before_step(std::size_t worker) override {
    if (!turns_->wait_turn(first_ + worker)) return false;
    const std::uint64_t woke = read_tsc();
    const std::uint64_t asked = turns_->handed_over();
    lag_ = asked != 0 && asked < woke ? woke - asked : 0;
    off_.move_off({cpus_[worker]});
    return true;
  }
  // Read by the worker whose turn it is, which wrote it: one at a time.
  std::uint64_t start_lag() const override { return lag_; }
  void after_step(std::size_t worker) override {
    // The last CPU of a step reports it, between two measurements.
    if (first_ + worker + 1 == participants_ && progress_) progress_(++done_, steps_);
    turns_->pass(first_ + worker);
  }

 private:
  std::vector<unsigned> cpus_;
  std::unique_ptr<TurnTaking> turns_;
  std::size_t first_;
  std::size_t participants_;
  ProcessOffCpus& off_;
  std::size_t steps_;
  const Runner::Progress& progress_;
  std::size_t done_ = 0;
  std::uint64_t lag_ = 0;
};

class CpuWorker {
 public:
  CpuWorker(const ProbeSettings& settings, Isa isa, const ProcessingUnit& pu,
            const ProcCounterReader& counters, Pacing& pacing, std::size_t index, CpuSamples& out)
      : settings_(settings),
        isa_(isa),
        pu_(pu),
        counters_(counters),
        pacing_(pacing),
        index_(index),
        out_(out) {}

  // Never throws: a failure is recorded in out_.error, and the worker still
  // takes every step (measuring nothing), so that no peer waits for it.
  void operator()() {
    try {
      pin_current_thread(pu_.cpu);
      prepare();
    } catch (const std::exception& e) {
      out_.error = e.what();
    }
    pacing_.prepared(index_);
    for (ProbeKind probe : settings_.probes) {
      for (int s = 0; s < settings_.samples; ++s) {
        if (!pacing_.before_step(index_)) return;
        if (out_.error.empty()) measure(probe);
        pacing_.after_step(index_);
      }
    }
  }

 private:
  void prepare() {
    const auto samples = static_cast<std::size_t>(settings_.samples);
    if (settings_.runs(ProbeKind::matmul)) {
      kernels_.matmul = std::make_unique<MatmulKernel>(settings_.matmul_size, settings_.dtype,
                                                       settings_.reps, isa_);
      kernels_.matmul->run();  // warm-up: caches, TLB, and the FPU's power state
      out_.matmul_work = kernels_.matmul->work();
      out_.matmul_seconds.reserve(samples);
      out_.matmul_product_seconds.resize(samples * static_cast<std::size_t>(settings_.reps));
    }
    if (settings_.runs(ProbeKind::clock)) {
      kernels_.clock.emplace();
      kernels_.clock->run();
      out_.clock_hertz.reserve(samples);
    }
    if (settings_.runs(ProbeKind::detour)) {
      kernels_.detour = std::make_unique<DetourProbe>(
          pu_.cpu, settings_.detour_window_seconds, settings_.detour_threshold_seconds, counters_);
      out_.detours.reserve(samples);
    }
    if (settings_.runs(ProbeKind::stream)) {
      const std::size_t bytes = settings_.stream_bytes > 0
                                    ? static_cast<std::size_t>(settings_.stream_bytes)
                                    : default_stream_bytes(pu_.llc_share_bytes);
      kernels_.stream = std::make_unique<StreamProbe>(bytes);
      kernels_.stream->run();
      out_.stream_work = kernels_.stream->work();
      out_.stream_seconds.reserve(samples);
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
      case ProbeKind::clock:
        out_.clock_hertz.push_back(kernels_.clock->run());
        break;
      case ProbeKind::detour:
        out_.detours.push_back(kernels_.detour->run(pacing_.start_lag()));
        break;
      case ProbeKind::stream:
        out_.stream_seconds.push_back(time_seconds([&] { kernels_.stream->run(); }));
        break;
    }
  }

  const ProbeSettings& settings_;
  Isa isa_;
  const ProcessingUnit& pu_;
  const ProcCounterReader& counters_;
  Pacing& pacing_;
  std::size_t index_;
  CpuSamples& out_;
  CpuKernels kernels_;
};

}  // namespace

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

RoundSamples Runner::run(Mode mode, const std::vector<unsigned>& cpus, const Progress& progress,
                         const std::atomic<bool>* cancel, const SharedRound* shared) const {
  if (shared != nullptr && (shared->memory == nullptr || shared->participants == 0 ||
                            shared->first + cpus.size() > shared->participants)) {
    throw std::invalid_argument("shared round: participants do not cover this process's CPUs");
  }
  RoundSamples round;
  round.mode = mode;
  round.isa = isa_;
  round.started_unix_seconds = unix_seconds_now();
  const auto t0 = std::chrono::steady_clock::now();
  const ProcCounterReader counters(settings_.proc_root);

  std::vector<const ProcessingUnit*> pus;
  for (unsigned cpu : cpus) {
    const ProcessingUnit* pu = topology_.find(cpu);
    if (pu == nullptr)
      throw std::invalid_argument("CPU " + std::to_string(cpu) + " is not in the topology");
    pus.push_back(pu);
  }
  round.cpus.resize(pus.size());
  for (std::size_t i = 0; i < pus.size(); ++i) round.cpus[i].cpu = pus[i]->cpu;

  // Taken before the probe threads exist, so that it moves every thread but
  // theirs.
  ProcessOffCpus off(mode == Mode::isolated ? std::vector<unsigned>{} : cpus);
  std::unique_ptr<Pacing> pacing;
  if (mode == Mode::isolated) {
    const std::size_t steps = settings_.probes.size() * static_cast<std::size_t>(settings_.samples);
    pacing = std::make_unique<InTurn>(cpus, cancel, off, steps, progress, shared);
  } else {
    pacing = std::make_unique<Together>(pus.size(), cancel, shared);
  }
  std::vector<std::thread> threads;
  threads.reserve(pus.size());
  for (std::size_t i = 0; i < pus.size(); ++i) {
    threads.emplace_back(CpuWorker(settings_, isa_, *pus[i], counters, *pacing, i, round.cpus[i]));
  }
  for (auto& t : threads) t.join();
  if (progress && mode == Mode::concurrent) progress(1, 1);
  round.cancelled = cancel != nullptr && cancel->load();
  round.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return round;
}

}  // namespace corenoise

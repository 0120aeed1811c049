#include "probe/runner.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "probe/clock_probe.h"
#include "probe/matmul.h"
#include "probe/pinning.h"
#include "probe/spin_barrier.h"
#include "probe/stream_probe.h"
#include "probe/tsc.h"

namespace corenoise {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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

class CpuWorker {
 public:
  CpuWorker(const ProbeSettings& settings, Isa isa, const ProcessingUnit& pu,
            const ProcCounterReader& counters, SpinBarrier* barrier,
            const std::atomic<bool>* cancel, CpuSamples& out)
      : settings_(settings),
        isa_(isa),
        pu_(pu),
        counters_(counters),
        barrier_(barrier),
        cancel_(cancel),
        out_(out) {}

  // Never throws: a failure is recorded in out_.error. With a barrier it
  // takes part in every phase even after a failure, so that no peer waits.
  void operator()() {
    try {
      pin_current_thread(pu_.cpu);
      prepare();
    } catch (const std::exception& e) {
      out_.error = e.what();
    }
    for (ProbeKind probe : settings_.probes) {
      for (int s = 0; s < settings_.samples; ++s) {
        if (!may_continue()) return;
        if (out_.error.empty()) measure(probe);
      }
    }
  }

 private:
  // With a barrier, all cores start each sample together and agree on
  // cancellation; alone, the worker checks the flag itself.
  bool may_continue() {
    if (barrier_ != nullptr) return barrier_->arrive_and_wait();
    return cancel_ == nullptr || !cancel_->load(std::memory_order_relaxed);
  }

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
        out_.detours.push_back(kernels_.detour->run());
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
  SpinBarrier* barrier_;
  const std::atomic<bool>* cancel_;
  CpuSamples& out_;
  CpuKernels kernels_;
};

}  // namespace

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
                         const std::atomic<bool>* cancel) const {
  RoundSamples round;
  round.mode = mode;
  round.isa = isa_;
  round.started_unix_seconds = unix_seconds();
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

  if (mode == Mode::isolated) {
    for (std::size_t i = 0; i < pus.size(); ++i) {
      if (cancel != nullptr && cancel->load()) break;
      const ProcessOffCpus off({pus[i]->cpu});
      std::thread(CpuWorker(settings_, isa_, *pus[i], counters, nullptr, cancel, round.cpus[i]))
          .join();
      if (progress) progress(i + 1, pus.size());
    }
  } else {
    const ProcessOffCpus off(cpus);
    SpinBarrier barrier(pus.size(), cancel);
    std::vector<std::thread> threads;
    threads.reserve(pus.size());
    for (std::size_t i = 0; i < pus.size(); ++i) {
      threads.emplace_back(
          CpuWorker(settings_, isa_, *pus[i], counters, &barrier, cancel, round.cpus[i]));
    }
    for (auto& t : threads) t.join();
    if (progress) progress(pus.size(), pus.size());
  }
  round.cancelled = cancel != nullptr && cancel->load();
  round.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return round;
}

}  // namespace corenoise

#include "collector/job/rank/job_session.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <tuple>

#include "collector/job/model/step_math.h"
#include "collector/job/rank/python_caller.h"

namespace corenoise {
namespace {

// The cost of one minor fault on this node, to price the faults counted:
// first touches of fresh anonymous pages, the median of a few batches.
double measure_fault_cost() {
  constexpr std::size_t kPages = 64;
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<double> batches;
  for (int batch = 0; batch < 5; ++batch) {
    void* memory = ::mmap(nullptr, kPages * static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return 0;
    auto* bytes = static_cast<volatile char*>(memory);
    const double t0 = clock_seconds(CLOCK_MONOTONIC);
    for (std::size_t i = 0; i < kPages; ++i) bytes[i * static_cast<std::size_t>(page)] = 1;
    batches.push_back((clock_seconds(CLOCK_MONOTONIC) - t0) / kPages);
    ::munmap(memory, kPages * static_cast<std::size_t>(page));
  }
  std::nth_element(batches.begin(), batches.begin() + 2, batches.end());
  return batches[2];
}

int current_tid() { return static_cast<int>(::gettid()); }

}  // namespace

double thread_cpu_seconds() { return clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

std::vector<unsigned> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<unsigned> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

JobSession::JobSession(JobOptions options, int ranks)
    : options_(std::move(options)),
      cpus_(affinity_cpus()),
      started_(monotonic_seconds()),
      started_unix_(clock_seconds(CLOCK_REALTIME)),
      recorder_(started_, thread_cpu_seconds()),
      peers_(ranks),
      sampler_(options_.proc_root, cpus_, current_tid()),
      call_clock_(kernel_keeps_time_by_tsc(options_.sys_root)),
      fault_cost_seconds_(measure_fault_cost()) {
  // Set-up time is not the job's: the first compute interval starts now.
  const double now = monotonic_seconds();
  recorder_ = IntervalRecorder(now, thread_cpu_seconds());
  recorder_.sample_callers(python_callers_available());
  sampler_.sample();
  next_sample_ = now + options_.min_interval_seconds;
  started_ = now;
}

void JobSession::enter() {
  const double now = call_clock_.now();
  recorder_.enter(now, cpu_if_wanted(now));
  if (now >= next_sample_) sample(now);
}

void JobSession::exit(MpiCall call, std::uintptr_t return_address, bool step,
                      std::span<const int> peers) {
  const double now = call_clock_.now();
  const double wait = recorder_.exit(now, cpu_if_wanted(now), call, return_address, step);
  if (mpi_call_role(call) == MpiCallRole::exchange) peers_.charge(peers, wait);
  if (CallSite* site = recorder_.wants_caller()) name_caller(*site);
  if (step) snapshot_step(recorder_.step_waits().steps());
  if (now >= next_between_) between_calls(now);
}

void JobSession::between_calls(double now) {
  const double cpu_before = thread_cpu_seconds();
  next_between_ = between_(between_context_, now);
  const double cost = monotonic_seconds() - now;
  windows_.overhead_seconds += cost;
  recorder_.exclude_from_compute(cost, thread_cpu_seconds() - cpu_before);
}

double JobSession::cpu_if_wanted(double now) const {
  return recorder_.wants_cpu(now) ? thread_cpu_seconds() : IntervalRecorder::kCpuNotRead;
}

void JobSession::snapshot_step(std::uint64_t steps) {
  static_assert(kMaxWarmupSteps == 1L << (std::tuple_size_v<decltype(step_snapshots_)> - 1));
  if ((steps & (steps - 1)) != 0 || steps > static_cast<std::uint64_t>(kMaxWarmupSteps)) return;
  // Counted to the boundary: the /proc windows too, not the last sample's.
  sample(monotonic_seconds(), false);
  step_snapshots_[step_snapshots_kept_++] = measures_with_clock(clock_.recent_median_hz());
}

const RankMeasures* JobSession::measures_at_step(long steps) const {
  for (std::size_t i = 0; i < step_snapshots_kept_; ++i) {
    if (1L << i == steps) return &step_snapshots_[i];
  }
  return nullptr;
}

void JobSession::name_caller(CallSite& site) {
  const double before = monotonic_seconds();
  const double cpu_before = thread_cpu_seconds();
  char text[CallSite::PythonLine{}.text.size()];
  if (python_caller(text, sizeof text)) recorder_.add_caller(site, text);
  const double cost = monotonic_seconds() - before;
  windows_.overhead_seconds += cost;
  recorder_.exclude_from_compute(cost, thread_cpu_seconds() - cpu_before);
}

void JobSession::sample(double now, bool in_call) {
  const double cpu_before = thread_cpu_seconds();
  const ProcWindow window = sampler_.sample();
  clock_.sample();
  // The call clock's anchor rides on the sample: one every 10 ms to 2 s.
  call_clock_.anchor();
  windows_.own_threads_seconds += window.own_threads_seconds;
  // Busy ticks and run times come from different clocks; the difference of
  // one window may dip below zero, and is summed as is so that the tick
  // rounding averages out rather than adding up.
  windows_.other_processes_seconds += window.cpu_busy_seconds - window.own_process_seconds;
  windows_.interrupt_seconds += window.interrupt_seconds;
  windows_.steal_seconds += window.steal_seconds;
  windows_.run_queue_seconds += window.main_run_queue_seconds;
  windows_.minor_faults += static_cast<double>(window.minor_faults);
  windows_.major_faults += static_cast<double>(window.major_faults);
  windows_.involuntary_switches += static_cast<double>(window.involuntary_switches);
  windows_.samples += 1;
  if (spill_)
    spill_->update(measures_with_clock(clock_.recent_median_hz()),
                   started_unix_ + (now - started_));

  // `now` may be the call clock's (from enter) and `after` is
  // clock_gettime's: they differ by at most an anchor's error (call_clock.h),
  // tens of ns, which is all the cost's error.
  const double after = monotonic_seconds();
  const double cost = after - now;
  const double cpu_cost = thread_cpu_seconds() - cpu_before;
  windows_.overhead_seconds += cost;
  if (in_call)
    recorder_.exclude(cost, cpu_cost);
  else
    recorder_.exclude_from_compute(cost, cpu_cost);
  // The cadence from the sample's CPU time, not its wall time: a sample
  // preempted by the very threads it measures took no longer to do, and
  // sampling less often then would lose the threads that exit meanwhile.
  const double interval = std::clamp(cpu_cost / options_.budget, options_.min_interval_seconds,
                                     options_.max_interval_seconds);
  next_sample_ = after + interval;
}

void JobSession::attach_spill(std::unique_ptr<SpillWriter> spill) {
  spill_ = std::move(spill);
  recorder_.step_waits().mirror_to(spill_->bins(), spill_->step_counts());
  spill_->update(measures_with_clock(clock_.recent_median_hz()), started_unix_);
}

void JobSession::close() {
  const double now = monotonic_seconds();
  recorder_.enter(now, thread_cpu_seconds());
  sample(now);
  ended_ = now;
}

RankMeasures JobSession::measures() const { return measures_with_clock(clock_.median_hz()); }

FrozenSession JobSession::freeze() const {
  std::vector<OwnThread> threads = sampler_.threads();
  if (threads.size() > 5) threads.resize(5);  // as many as a record lists
  return FrozenSession{
      &options_,
      recorder_.frozen(),
      peers_,
      measures(),
      {step_snapshots_.begin(), step_snapshots_.begin() + static_cast<long>(step_snapshots_kept_)},
      std::move(threads),
      sampler_.peak_busy_threads(),
      cpus_,
      started_unix_,
      started_,
      std::string(clock_.source())};
}

RankMeasures JobSession::measures_with_clock(double clock_hz) const {
  RankMeasures m = windows_;
  const IntervalTotals& totals = recorder_.totals();
  m.elapsed_seconds = (ended_ > 0 ? ended_ : monotonic_seconds()) - started_;
  m.compute_seconds = totals.compute_seconds;
  m.compute_cpu_seconds = totals.compute_cpu_seconds;
  m.wait_seconds = totals.wait_seconds;
  m.wait_cpu_seconds = totals.wait_cpu_seconds;
  m.exchange_wait_seconds = totals.exchange_wait_seconds;
  m.exchange_uncharged_seconds = peers_.uncharged_seconds();
  m.off_cpu_seconds = off_cpu(m);
  m.calls = static_cast<double>(totals.calls);
  m.steps = static_cast<double>(recorder_.step_waits().steps());
  m.other_processes_seconds = std::max(0.0, m.other_processes_seconds);
  m.fault_seconds = m.minor_faults * fault_cost_seconds_;
  m.clock_hz = clock_hz;
  return m;
}

}  // namespace corenoise

#include "collector/job/rank/interval_recorder.h"

#include <algorithm>
#include <cstring>

namespace corenoise {

StepWaits::StepWaits(std::size_t max_bins)
    : max_bins_(std::max<std::size_t>(2, max_bins & ~std::size_t{1})) {
  bins_.reserve(max_bins_);
  sites_.reserve(max_bins_);
  ends_.reserve(max_bins_);
}

void StepWaits::add(double wait_seconds, std::uint16_t site, double now) {
  if (steps_ % steps_per_bin_ == 0) {
    if (bins_.size() == max_bins_) {
      // Full: merge neighbours, halving the resolution of the whole record.
      for (std::size_t i = 0; i < max_bins_ / 2; ++i) {
        bins_[i] = bins_[2 * i] + bins_[2 * i + 1];
        sites_[i] = sites_[2 * i];
        ends_[i] = ends_[2 * i + 1];
      }
      bins_.resize(max_bins_ / 2);
      sites_.resize(max_bins_ / 2);
      ends_.resize(max_bins_ / 2);
      steps_per_bin_ *= 2;
      if (mirror_ != nullptr) std::copy(bins_.begin(), bins_.end(), mirror_);
    }
    if (steps_ % steps_per_bin_ == 0) {
      bins_.push_back(0.0);
      sites_.push_back(site);
      ends_.push_back(now);
    }
  }
  bins_.back() += wait_seconds;
  ends_.back() = now;
  ++steps_;
  if (mirror_ != nullptr) {
    mirror_[bins_.size() - 1] = bins_.back();
    mirror_counts();
  }
}

void StepWaits::mirror_to(double* bins, std::uint64_t* counts) {
  mirror_ = bins;
  mirror_counts_ = counts;
  std::copy(bins_.begin(), bins_.end(), mirror_);
  mirror_counts();
}

void StepWaits::mirror_counts() {
  mirror_counts_[0] = steps_;
  mirror_counts_[1] = steps_per_bin_;
  mirror_counts_[2] = bins_.size();
}

IntervalRecorder::IntervalRecorder(double now, double thread_cpu, std::size_t max_step_bins)
    : steps_(max_step_bins), interval_start_(now), interval_start_cpu_(thread_cpu) {}

double IntervalRecorder::cpu_of(double thread_cpu, double since, double wall, double& assumed) {
  if (thread_cpu == kCpuNotRead) {
    // Not read: on the CPU throughout (kUnreadInterval), until a reading
    // says otherwise.
    assumed += wall;
    interval_start_cpu_ = since + wall;
    return wall;
  }
  const double share = thread_cpu - since;
  interval_start_cpu_ = thread_cpu;
  if (share < 0) {
    // Less CPU time since the last reading than the short intervals were
    // assumed to have: the shortfall was theirs, taken back from each in
    // proportion.
    const double assumed_total = assumed_compute_cpu_ + assumed_wait_cpu_;
    const double back = std::min(-share, assumed_total);
    if (assumed_total > 0) {
      totals_.compute_cpu_seconds -= back * assumed_compute_cpu_ / assumed_total;
      totals_.wait_cpu_seconds -= back * assumed_wait_cpu_ / assumed_total;
    }
  }
  assumed_compute_cpu_ = assumed_wait_cpu_ = 0;
  return std::clamp(share, 0.0, wall);
}

void IntervalRecorder::enter(double now, double thread_cpu) {
  const double compute = std::max(0.0, now - interval_start_);
  totals_.compute_seconds += compute;
  totals_.compute_cpu_seconds +=
      cpu_of(thread_cpu, interval_start_cpu_, compute, assumed_compute_cpu_);
  interval_start_ = now;
  excluded_ = 0;
  excluded_cpu_ = 0;
  in_call_ = true;
}

double IntervalRecorder::exit(double now, double thread_cpu, MpiCall call,
                              std::uintptr_t return_address, bool step) {
  const double wait = std::max(0.0, now - interval_start_ - excluded_);
  // The call's time on the CPU; the rest the thread was kept off it.
  totals_.wait_seconds += wait;
  totals_.wait_cpu_seconds +=
      cpu_of(thread_cpu, interval_start_cpu_ + excluded_cpu_, wait, assumed_wait_cpu_);
  if (mpi_call_role(call) == MpiCallRole::exchange) totals_.exchange_wait_seconds += wait;
  ++totals_.calls;
  CallSite& s = site(call, return_address);
  ++s.calls;
  s.wait_seconds += wait;
  const bool longest = wait > s.wait_max_seconds;
  s.wait_max_seconds = std::max(s.wait_max_seconds, wait);
  wants_caller_ = nullptr;
  if (sample_callers_ && s.return_address != 0 && (s.calls >= s.next_python_sample || longest)) {
    if (s.calls >= s.next_python_sample) s.next_python_sample = 2 * s.calls;
    wants_caller_ = &s;
  }
  // A step's wait in wall time: the last rank to arrive waits least,
  // whatever the ranks do while they wait. MPI libraries poll, yield or
  // sleep in their waits (Open MPI's mpi_yield_when_idle, Intel MPI's
  // I_MPI_WAIT_MODE, an oversubscribed node): time off the CPU inside a
  // wait is the waiting's own, never lateness (docs/job.md, "What is
  // measured").
  if (step) {
    const bool in_table = &s >= sites_.data() && &s < sites_.data() + kTableSlots;
    const auto tag = static_cast<std::uint16_t>(in_table ? &s - sites_.data()
                                                         : kTableSlots + (&s - overflow_.data()));
    steps_.add(wait, tag, now);
  }
  interval_start_ = now;
  in_call_ = false;
  return wait;
}

void IntervalRecorder::add_caller(CallSite& site, const char* text) {
  for (CallSite::PythonLine& line : site.python) {
    if (line.text[0] == '\0') {
      std::strncpy(line.text.data(), text, line.text.size() - 1);
      line.samples = 1;
      return;
    }
    if (std::strncmp(line.text.data(), text, line.text.size() - 1) == 0) {
      ++line.samples;
      return;
    }
  }
}

double IntervalRecorder::compute_seconds_at(double now) const {
  return totals_.compute_seconds + (in_call_ ? 0.0 : std::max(0.0, now - interval_start_));
}

CallSite& IntervalRecorder::site(MpiCall call, std::uintptr_t return_address) {
  // Fibonacci hashing of the address and call; linear probing.
  const std::uint64_t key =
      (static_cast<std::uint64_t>(return_address) << 5) ^ static_cast<std::uint64_t>(call);
  // The top 9 bits: a slot of the 512.
  static_assert(kTableSlots == 512);
  std::size_t slot = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 55) % kTableSlots;
  for (std::size_t probe = 0; probe < kTableSlots; ++probe) {
    CallSite& s = sites_[slot];
    if (s.call == call && s.return_address == return_address) return s;
    if (s.call == MpiCall::count) {
      if (used_ == kMaxCallSites) break;  // full: at most half the slots, so probes stay short
      s.call = call;
      s.return_address = return_address;
      order_[used_++] = static_cast<std::uint16_t>(slot);
      return s;
    }
    slot = (slot + 1) % kTableSlots;
  }
  CallSite& other = overflow_[static_cast<std::size_t>(call)];
  other.call = call;
  return other;
}

const CallSite* IntervalRecorder::site_at(std::uint16_t tag) const {
  if (tag < kTableSlots) return sites_[tag].calls > 0 ? &sites_[tag] : nullptr;
  const std::size_t other = tag - kTableSlots;
  return other < overflow_.size() && overflow_[other].calls > 0 ? &overflow_[other] : nullptr;
}

std::vector<CallSite> IntervalRecorder::call_sites() const {
  std::vector<CallSite> sites;
  for (std::size_t i = 0; i < used_; ++i) sites.push_back(sites_[order_[i]]);
  for (const CallSite& other : overflow_) {
    if (other.calls > 0) sites.push_back(other);
  }
  return sites;
}

}  // namespace corenoise

#include "collector/job/rank/clock_sampler.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "probe/clock_probe.h"
#include "probe/tsc.h"

namespace corenoise {
namespace {

int open_counter(std::uint64_t config, int group) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.exclude_kernel = 1;  // allowed at perf_event_paranoid 2
  attr.exclude_hv = 1;
  attr.read_format = PERF_FORMAT_GROUP;
  return static_cast<int>(
      ::syscall(SYS_perf_event_open, &attr, 0, -1, group, PERF_FLAG_FD_CLOEXEC));
}

// About 3 µs at 3 GHz: four chunks of 2,000 adds, the fastest kept, so a
// chunk cut by an interrupt does not read as a slow clock.
const ClockProbe& chain() {
  static const ClockProbe probe(2000, 4);
  return probe;
}

}  // namespace

ClockSampler::ClockSampler() {
  cycles_fd_ = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1);
  if (cycles_fd_ >= 0) reference_fd_ = open_counter(PERF_COUNT_HW_REF_CPU_CYCLES, cycles_fd_);
  if (reference_fd_ < 0 && cycles_fd_ >= 0) {
    ::close(cycles_fd_);
    cycles_fd_ = -1;
  }
  tsc_hertz();  // calibrate now (30 ms), not inside a step: both sources use it
  sample();
}

ClockSampler::~ClockSampler() {
  if (reference_fd_ >= 0) ::close(reference_fd_);
  if (cycles_fd_ >= 0) ::close(cycles_fd_);
}

void ClockSampler::sample() {
  double hz = 0;
  if (cycles_fd_ >= 0) {
    std::uint64_t values[3] = {};  // nr, cycles, reference
    if (::read(cycles_fd_, values, sizeof(values)) != static_cast<ssize_t>(sizeof(values))) return;
    const std::uint64_t cycles = values[1] - last_cycles_;
    const std::uint64_t reference = values[2] - last_reference_;
    const bool first = last_reference_ == 0;
    last_cycles_ = values[1];
    last_reference_ = values[2];
    if (first || reference < 1000) return;  // too short a window to say
    hz = static_cast<double>(cycles) / static_cast<double>(reference) * tsc_hertz();
  } else {
    hz = chain().run();
  }
  samples_[count_ % kMaxSamples] = hz;
  ++count_;
}

double ClockSampler::median_hz() const {
  const std::size_t n = std::min(count_, kMaxSamples);
  if (n == 0) return 0;
  std::copy_n(samples_.begin(), n, scratch_.begin());
  const auto end = scratch_.begin() + static_cast<std::ptrdiff_t>(n);
  std::nth_element(scratch_.begin(), scratch_.begin() + static_cast<std::ptrdiff_t>(n / 2), end);
  return scratch_[n / 2];
}

double ClockSampler::recent_median_hz() {
  const std::size_t held = std::min(count_, kMaxSamples);
  if (recent_at_ == 0 || count_ >= recent_at_ + std::max<std::size_t>(1, held / 32)) {
    recent_ = median_hz();
    recent_at_ = count_;
  }
  return recent_;
}

std::string_view ClockSampler::source() const {
  return cycles_fd_ >= 0 ? "perf_event" : "dependent-add chain";
}

}  // namespace corenoise

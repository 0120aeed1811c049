#include "probe/clock_probe.h"

#include <algorithm>
#include <limits>

#include "probe/probe_kinds.h"
#include "probe/tsc.h"

namespace corenoise {
namespace {

constexpr std::uint64_t kAddsPerBlock = 100;

// kAddsPerBlock dependent adds per iteration; the loop counter runs on a
// separate dependency chain and overlaps with them.
void dependent_adds(std::uint64_t blocks) {
  std::uint64_t acc = 0;
  const std::uint64_t one = 1;
  asm volatile(
      "1:\n\t"
      ".rept 100\n\t"
      "add %[one], %[acc]\n\t"
      ".endr\n\t"
      "dec %[blocks]\n\t"
      "jnz 1b"
      : [acc] "+r"(acc), [blocks] "+r"(blocks)
      : [one] "r"(one)
      : "cc");
}

}  // namespace

ClockProbe::ClockProbe(std::uint64_t adds_per_chunk, int chunks)
    : blocks_per_chunk_(
          std::max<std::uint64_t>(1, (adds_per_chunk + kAddsPerBlock - 1) / kAddsPerBlock)),
      chunks_(std::max(1, chunks)) {}

double ClockProbe::run() const {
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (int i = 0; i < chunks_; ++i) {
    const auto t0 = read_tsc();
    dependent_adds(blocks_per_chunk_);
    const auto t1 = read_tsc();
    best = std::min(best, t1 - t0);
  }
  return work().cycles / tsc_to_seconds(std::max<std::uint64_t>(best, 1));
}

KernelWork ClockProbe::work() const {
  return KernelWork{.cycles = static_cast<double>(blocks_per_chunk_ * kAddsPerBlock)};
}

namespace {

// The clock probe as the runner drives it (probe_kinds.h): a sample is the
// clock itself, timed inside run().
class ClockKernel final : public ProbeKernel {
 public:
  double sample() override { return probe_.run(); }
  KernelWork work() const override { return probe_.work(); }

 private:
  ClockProbe probe_;
};

}  // namespace

std::unique_ptr<ProbeKernel> make_clock_kernel(const ProbeSettings&, const ProcessingUnit&) {
  return std::make_unique<ClockKernel>();
}

}  // namespace corenoise

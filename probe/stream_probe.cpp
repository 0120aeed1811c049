#include "probe/stream_probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

#include "probe/probe_kinds.h"
#include "probe/settings.h"
#include "probe/topology.h"
#include "probe/tsc.h"

namespace corenoise {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::uint64_t kImplausibleShare = 64 * kMiB;

// Straight from the kernel and straight back: a heap allocation of this size
// would stay resident in malloc's arenas after the round, and a daemon that
// probes every few minutes must not keep tens of MB between rounds.
double* allocate(std::size_t elements) {
  void* p = ::mmap(nullptr, elements * sizeof(double), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<double*>(p);
}

void release(double* p, std::size_t elements) { ::munmap(p, elements * sizeof(double)); }

}  // namespace

std::size_t default_stream_bytes(std::uint64_t llc_share_bytes) {
  // No server core has more than ~12 MiB of LLC to itself; VMs report
  // whatever the hypervisor says (this development VM: 508 MB per core).
  if (llc_share_bytes == 0 || llc_share_bytes > kImplausibleShare) return 8 * kMiB;
  return std::clamp<std::size_t>(4 * static_cast<std::size_t>(llc_share_bytes), 8 * kMiB,
                                 64 * kMiB);
}

StreamProbe::StreamProbe(std::size_t total_bytes)
    : elements_(std::max<std::size_t>(1024, total_bytes / (3 * sizeof(double)))),
      a_(allocate(elements_)),
      b_(allocate(elements_)),
      c_(allocate(elements_)) {
  for (std::size_t i = 0; i < elements_; ++i) {
    a_[i] = 0.0;
    b_[i] = 1.0;
    c_[i] = 2.0;
  }
}

StreamProbe::~StreamProbe() {
  release(a_, elements_);
  release(b_, elements_);
  release(c_, elements_);
}

void StreamProbe::run() {
  const double scalar = 3.0;
  double* __restrict a = a_;
  const double* __restrict b = b_;
  const double* __restrict c = c_;
  for (std::size_t i = 0; i < elements_; ++i) a[i] = b[i] + scalar * c[i];
  // Keep the stores: the compiler cannot see that nobody reads a_.
  asm volatile("" : : "r"(a) : "memory");
}

KernelWork StreamProbe::work() const {
  return KernelWork{.bytes = static_cast<double>(elements_ * 3 * sizeof(double))};
}

namespace {

// The stream probe as the runner drives it (probe_kinds.h): a sample is
// one triad pass's time.
class StreamKernel final : public ProbeKernel {
 public:
  explicit StreamKernel(std::size_t bytes) : probe_(bytes) {}
  double sample() override {
    const auto t0 = read_tsc();
    probe_.run();
    return tsc_to_seconds(read_tsc() - t0);
  }
  KernelWork work() const override { return probe_.work(); }

 private:
  StreamProbe probe_;
};

}  // namespace

std::unique_ptr<ProbeKernel> make_stream_kernel(const ProbeSettings& settings,
                                                const ProcessingUnit& pu) {
  const std::size_t bytes = settings.stream_bytes > 0
                                ? static_cast<std::size_t>(settings.stream_bytes)
                                : default_stream_bytes(pu.llc_share_bytes);
  return std::make_unique<StreamKernel>(bytes);
}

}  // namespace corenoise

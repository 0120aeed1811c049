#include "probe/stream_probe.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace corenoise {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kAlignment = 64;

double* allocate(std::size_t elements) {
  const std::size_t bytes = (elements * sizeof(double) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<double*>(p);
}

}  // namespace

std::size_t default_stream_bytes(std::uint64_t llc_share_bytes) {
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
  std::free(a_);
  std::free(b_);
  std::free(c_);
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

}  // namespace corenoise

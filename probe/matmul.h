// The matmul probe: a fixed dense C = A·B, repeated `reps` times, with
// register-blocked micro-kernels for AVX-512, AVX2 and a portable baseline
// chosen at run time. It loads the FPUs as real HPC code does, so that its
// time reflects what a compute-bound rank on that core would see.
//
// Thread safety: a MatmulKernel is used by one thread at a time. Construct it
// on the thread that will run it, after pinning, so that its buffers are
// first-touched on that core's NUMA node.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "probe/work.h"

namespace corenoise {

enum class Dtype { f32, f64 };
enum class Isa { baseline, avx2, avx512 };

std::string_view to_string(Dtype dtype);
std::string_view to_string(Isa isa);
std::optional<Dtype> parse_dtype(std::string_view text);  // "f32" | "f64"
std::optional<Isa> parse_isa(std::string_view text);      // "baseline" | "avx2" | "avx512"

// Whether this CPU and OS can run `isa` (CPUID and XCR0 state).
bool isa_supported(Isa isa);
// The widest supported ISA.
Isa best_isa();

// C = A·B for row-major n×n matrices, overwriting C. Thread-safe (no shared
// state). Throws std::invalid_argument if n <= 0 or `isa` is not supported.
void gemm(Isa isa, int n, const float* a, const float* b, float* c);
void gemm(Isa isa, int n, const double* a, const double* b, double* c);

class MatmulKernel {
 public:
  // Allocates and fills A and B (deterministic values), C and any packing
  // buffers. Throws std::invalid_argument for n <= 0, reps <= 0 or an
  // unsupported ISA.
  MatmulKernel(int n, Dtype dtype, int reps, Isa isa);
  ~MatmulKernel();
  MatmulKernel(const MatmulKernel&) = delete;
  MatmulKernel& operator=(const MatmulKernel&) = delete;

  // The timed work: C = A·B, `reps` times. No allocation, no I/O. If
  // `product_seconds` is given, the time of each product is written to
  // product_seconds[0..reps): the sample's time with the intervals that
  // interruptions struck told apart from the clean ones.
  void run(double* product_seconds = nullptr);
  // 2·n³·reps FLOP; bytes: the three matrices once per repetition.
  KernelWork work() const;
  // Sum of C's elements, for checking that run() computed the product.
  double checksum() const;

  int n() const { return n_; }
  Dtype dtype() const { return dtype_; }
  Isa isa() const { return isa_; }

 private:
  struct Buffers;
  int n_;
  Dtype dtype_;
  int reps_;
  Isa isa_;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace corenoise

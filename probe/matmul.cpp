// The matmul probe: ISA detection and dispatch, and the preallocated kernel.
// The arithmetic lives in matmul_microkernel.h, compiled once per ISA by
// matmul_isa_*.cpp; this file is built with the default flags and must never
// execute an instruction the CPU may lack.
#include "probe/matmul.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "probe/matmul_isa.h"
#include "probe/tsc.h"

namespace corenoise {
namespace {

using namespace matmul_detail;

template <class T>
struct Impl {
  std::size_t (*workspace)(int n);
  void (*gemm)(int n, const T* a, const T* b, T* c, T* work);
};

Impl<float> impl_f32(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return {gemm_f32_avx512_workspace, gemm_f32_avx512};
    case Isa::avx2:
      return {gemm_f32_avx2_workspace, gemm_f32_avx2};
    case Isa::baseline:
      break;
  }
  return {gemm_f32_baseline_workspace, gemm_f32_baseline};
}

Impl<double> impl_f64(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return {gemm_f64_avx512_workspace, gemm_f64_avx512};
    case Isa::avx2:
      return {gemm_f64_avx2_workspace, gemm_f64_avx2};
    case Isa::baseline:
      break;
  }
  return {gemm_f64_baseline_workspace, gemm_f64_baseline};
}

Impl<float> impl(Isa isa, float*) { return impl_f32(isa); }
Impl<double> impl(Isa isa, double*) { return impl_f64(isa); }

// 64-byte aligned: packing takes aligned vector stores, and matrices that
// start on a cache line keep row loads from splitting lines when n·size is a
// multiple of 64 (all the probe's default sizes).
struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<void, AlignedFree>;

AlignedBytes allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return AlignedBytes(p);
}

void check_args(int n, Isa isa) {
  if (n <= 0) {
    throw std::invalid_argument("matmul: n = " + std::to_string(n) + ", expected n >= 1");
  }
  if (!isa_supported(isa)) {
    throw std::invalid_argument("matmul: isa = " + std::string(to_string(isa)) +
                                " is not supported by this CPU/OS, expected one up to " +
                                std::string(to_string(best_isa())));
  }
}

template <class T>
void gemm_alloc(Isa isa, int n, const T* a, const T* b, T* c) {
  check_args(n, isa);
  const Impl<T> f = impl(isa, static_cast<T*>(nullptr));
  AlignedBytes work = allocate(f.workspace(n) * sizeof(T));
  f.gemm(n, a, b, c, static_cast<T*>(work.get()));
}

// Small multiples of 1/8 (|x| <= 1): every product is a multiple of 1/64
// and every partial sum of a row·column is exact in f32 for n < 2^18, so
// C, and checksum(), do not depend on summation order, blocking or ISA.
double fill_a(std::size_t i, std::size_t j) {
  return static_cast<double>(static_cast<int>((i * 7 + j * 3) % 17) - 8) / 8;
}
double fill_b(std::size_t i, std::size_t j) {
  return static_cast<double>(static_cast<int>((i * 5 + j * 11) % 13) - 6) / 8;
}

}  // namespace

std::string_view to_string(Dtype dtype) { return dtype == Dtype::f32 ? "f32" : "f64"; }

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::baseline:
      break;
  }
  return "baseline";
}

std::optional<Dtype> parse_dtype(std::string_view text) {
  if (text == "f32") return Dtype::f32;
  if (text == "f64") return Dtype::f64;
  return std::nullopt;
}

std::optional<Isa> parse_isa(std::string_view text) {
  if (text == "baseline") return Isa::baseline;
  if (text == "avx2") return Isa::avx2;
  if (text == "avx512") return Isa::avx512;
  return std::nullopt;
}

bool isa_supported(Isa isa) {
  // libgcc's CPUID probe also checks XCR0, so a feature the OS does not
  // save on context switch (e.g. AVX-512 state in some VMs) reads as absent.
  __builtin_cpu_init();
  switch (isa) {
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::baseline:
      return true;
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::avx512)) return Isa::avx512;
  if (isa_supported(Isa::avx2)) return Isa::avx2;
  return Isa::baseline;
}

void gemm(Isa isa, int n, const float* a, const float* b, float* c) { gemm_alloc(isa, n, a, b, c); }
void gemm(Isa isa, int n, const double* a, const double* b, double* c) {
  gemm_alloc(isa, n, a, b, c);
}

struct MatmulKernel::Buffers {
  AlignedBytes a, b, c, work;
};

namespace {

template <class T>
void fill(int n, void* a, void* b, void* c) {
  T* ta = static_cast<T*>(a);
  T* tb = static_cast<T*>(b);
  T* tc = static_cast<T*>(c);
  const std::size_t m = static_cast<std::size_t>(n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < m; ++j) {
      ta[i * m + j] = static_cast<T>(fill_a(i, j));
      tb[i * m + j] = static_cast<T>(fill_b(i, j));
      tc[i * m + j] = T{};
    }
  }
}

template <class T>
double sum(int n, const void* c) {
  const T* tc = static_cast<const T*>(c);
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  double total = 0;
  for (std::size_t i = 0; i < count; ++i) total += tc[i];
  return total;
}

// `reps` products; two TSC reads per product (~20 ns against ~40 µs) when
// their times are wanted.
template <typename T>
void run_products(const Impl<T>& f, int n, int reps, const T* a, const T* b, T* c, T* work,
                  double* product_seconds) {
  for (int r = 0; r < reps; ++r) {
    const std::uint64_t t0 = product_seconds != nullptr ? read_tsc() : 0;
    f.gemm(n, a, b, c, work);
    if (product_seconds != nullptr) product_seconds[r] = tsc_to_seconds(read_tsc() - t0);
  }
}

}  // namespace

MatmulKernel::MatmulKernel(int n, Dtype dtype, int reps, Isa isa)
    : n_(n), dtype_(dtype), reps_(reps), isa_(isa) {
  check_args(n, isa);
  if (reps <= 0) {
    throw std::invalid_argument("matmul: reps = " + std::to_string(reps) + ", expected reps >= 1");
  }
  const std::size_t elems = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  const std::size_t size = dtype == Dtype::f32 ? sizeof(float) : sizeof(double);
  const std::size_t work =
      dtype == Dtype::f32 ? impl_f32(isa).workspace(n) : impl_f64(isa).workspace(n);
  buffers_ = std::make_unique<Buffers>();
  buffers_->a = allocate(elems * size);
  buffers_->b = allocate(elems * size);
  buffers_->c = allocate(elems * size);
  buffers_->work = allocate(work * size);
  if (dtype == Dtype::f32) {
    fill<float>(n, buffers_->a.get(), buffers_->b.get(), buffers_->c.get());
  } else {
    fill<double>(n, buffers_->a.get(), buffers_->b.get(), buffers_->c.get());
  }
  // Touch the workspace too, so run() never takes a first-touch page fault.
  std::fill_n(static_cast<unsigned char*>(buffers_->work.get()), work * size, 0);
}

MatmulKernel::~MatmulKernel() = default;

void MatmulKernel::run(double* product_seconds) {
  Buffers& b = *buffers_;
  if (dtype_ == Dtype::f32) {
    run_products(impl_f32(isa_), n_, reps_, static_cast<const float*>(b.a.get()),
                 static_cast<const float*>(b.b.get()), static_cast<float*>(b.c.get()),
                 static_cast<float*>(b.work.get()), product_seconds);
  } else {
    run_products(impl_f64(isa_), n_, reps_, static_cast<const double*>(b.a.get()),
                 static_cast<const double*>(b.b.get()), static_cast<double*>(b.c.get()),
                 static_cast<double*>(b.work.get()), product_seconds);
  }
}

KernelWork MatmulKernel::work() const {
  const double n = n_;
  const double size = dtype_ == Dtype::f32 ? sizeof(float) : sizeof(double);
  KernelWork w;
  w.flops = 2 * n * n * n * reps_;
  w.bytes = 3 * n * n * size * reps_;
  return w;
}

double MatmulKernel::checksum() const {
  return dtype_ == Dtype::f32 ? sum<float>(n_, buffers_->c.get())
                              : sum<double>(n_, buffers_->c.get());
}

}  // namespace corenoise

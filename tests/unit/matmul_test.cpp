// The matmul probe: gemm() against a naive double-precision reference for
// every ISA this CPU runs (and a throw for every one it does not), the
// kernel's checksum and work, bad inputs and the string forms.
#include "probe/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace corenoise {
namespace {

const Isa kAllIsas[] = {Isa::baseline, Isa::avx2, Isa::avx512};

// Sizes: tiny, ragged against every MR (3, 6, 8) and NR (8..32), the probe's
// sizes, and past the direct path (n > 256) so that the packed path runs
// with several KC slices (C accumulated) and MC blocks.
const int kSizes[] = {1, 2, 7, 13, 33, 64, 100, 128, 129, 256, 257, 520};

// Deterministic values in [-1, 1).
std::vector<double> random_matrix(int n, std::uint64_t seed) {
  std::vector<double> m(static_cast<std::size_t>(n) * n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& v : m) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<double>(x >> 11) / 9007199254740992.0 * 2 - 1;
  }
  return m;
}

template <class T>
void expect_gemm_matches_reference(Isa isa, int n) {
  SCOPED_TRACE("isa " + std::string(to_string(isa)) + ", n " + std::to_string(n) +
               (sizeof(T) == 4 ? ", f32" : ", f64"));
  const std::size_t size = static_cast<std::size_t>(n) * n;
  const std::vector<double> ad = random_matrix(n, 1), bd = random_matrix(n, 2);
  // One spare element in front: gemm() must not assume aligned arguments.
  std::vector<T> a(size + 1), b(size + 1), c(size + 1, std::numeric_limits<T>::quiet_NaN());
  for (std::size_t i = 0; i < size; ++i) {
    a[i + 1] = static_cast<T>(ad[i]);
    b[i + 1] = static_cast<T>(bd[i]);
  }
  gemm(isa, n, a.data() + 1, b.data() + 1, c.data() + 1);  // overwrites the NaNs

  // Reference in double from the same (rounded) inputs; the tolerance is the
  // classic dot-product bound n·eps·Σ|a||b|, which any summation order meets.
  const double eps = std::numeric_limits<T>::epsilon();
  std::vector<double> ref(n), mag(n);
  int failures = 0;
  for (int i = 0; i < n && failures < 5; ++i) {
    std::fill(ref.begin(), ref.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int k = 0; k < n; ++k) {
      const double aik = a[1 + i * n + k];
      for (int j = 0; j < n; ++j) {
        const double p = aik * double(b[1 + k * n + j]);
        ref[j] += p;
        mag[j] += std::fabs(p);
      }
    }
    for (int j = 0; j < n && failures < 5; ++j) {
      const double got = c[1 + i * n + j];
      const double tol = n * eps * mag[j] + std::numeric_limits<double>::min();
      if (!(std::fabs(got - ref[j]) <= tol)) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << ref[j]
                      << " +- " << tol;
        ++failures;
      }
    }
  }
  EXPECT_TRUE(std::isnan(c[0])) << "gemm wrote before C";
}

TEST(MatmulGemm, MatchesReferenceOrThrowsForEveryIsa) {
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) {
      // Not SKIPped: the contract for an ISA the CPU lacks is a throw.
      std::vector<double> m(4);
      EXPECT_THROW(gemm(isa, 2, m.data(), m.data(), m.data()), std::invalid_argument);
      std::vector<float> f(4);
      EXPECT_THROW(gemm(isa, 2, f.data(), f.data(), f.data()), std::invalid_argument);
      EXPECT_THROW(MatmulKernel(8, Dtype::f64, 1, isa), std::invalid_argument);
      continue;
    }
    for (int n : kSizes) {
      expect_gemm_matches_reference<float>(isa, n);
      expect_gemm_matches_reference<double>(isa, n);
    }
  }
}

TEST(MatmulGemm, RejectsNonPositiveSize) {
  std::vector<double> m(4);
  EXPECT_THROW(gemm(Isa::baseline, 0, m.data(), m.data(), m.data()), std::invalid_argument);
  EXPECT_THROW(gemm(Isa::baseline, -3, m.data(), m.data(), m.data()), std::invalid_argument);
  std::vector<float> f(4);
  EXPECT_THROW(gemm(best_isa(), 0, f.data(), f.data(), f.data()), std::invalid_argument);
}

TEST(MatmulIsa, PredicatesAreConsistent) {
  EXPECT_TRUE(isa_supported(Isa::baseline));  // every x86-64 CPU
  EXPECT_TRUE(isa_supported(best_isa()));
  // best_isa() is the widest supported one.
  if (isa_supported(Isa::avx512)) {
    EXPECT_EQ(best_isa(), Isa::avx512);
  } else if (isa_supported(Isa::avx2)) {
    EXPECT_EQ(best_isa(), Isa::avx2);
  } else {
    EXPECT_EQ(best_isa(), Isa::baseline);
  }
  // Every AVX-512 CPU we dispatch to also has AVX2 (the ladder is nested).
  if (isa_supported(Isa::avx512)) {
    EXPECT_TRUE(isa_supported(Isa::avx2));
  }
  // Stable across calls.
  EXPECT_EQ(best_isa(), best_isa());
}

TEST(MatmulStrings, RoundTrip) {
  for (Dtype d : {Dtype::f32, Dtype::f64}) EXPECT_EQ(parse_dtype(to_string(d)), d);
  for (Isa isa : kAllIsas) EXPECT_EQ(parse_isa(to_string(isa)), isa);
  EXPECT_EQ(to_string(Dtype::f32), "f32");
  EXPECT_EQ(to_string(Isa::avx512), "avx512");
  for (const char* bad : {"", "F32", "f16", "double", " f64"}) {
    EXPECT_FALSE(parse_dtype(bad).has_value()) << bad;
  }
  for (const char* bad : {"", "AVX2", "avx-512", "sse2", "avx512f"}) {
    EXPECT_FALSE(parse_isa(bad).has_value()) << bad;
  }
}

// The kernel's inputs as matmul.cpp documents them: small multiples of 1/8,
// so every sum is exact and the checksum is the same for every ISA, dtype,
// blocking and summation order.
double kernel_a(int i, int j) { return ((i * 7 + j * 3) % 17 - 8) / 8.0; }
double kernel_b(int i, int j) { return ((i * 5 + j * 11) % 13 - 6) / 8.0; }

double reference_checksum(int n) {
  // Σ_ij (AB)_ij = Σ_k (Σ_i A_ik)(Σ_j B_kj).
  double total = 0;
  for (int k = 0; k < n; ++k) {
    double col = 0, row = 0;
    for (int i = 0; i < n; ++i) col += kernel_a(i, k);
    for (int j = 0; j < n; ++j) row += kernel_b(k, j);
    total += col * row;
  }
  return total;
}

TEST(MatmulKernel, ChecksumMatchesReference) {
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) continue;  // covered by the throw above
    for (Dtype dtype : {Dtype::f32, Dtype::f64}) {
      for (int n : {1, 7, 64, 128, 129, 300}) {
        SCOPED_TRACE(std::string(to_string(isa)) + " " + std::string(to_string(dtype)) + " n " +
                     std::to_string(n));
        MatmulKernel kernel(n, dtype, 2, isa);
        EXPECT_EQ(kernel.checksum(), 0.0);  // C starts zeroed
        kernel.run();
        EXPECT_EQ(kernel.checksum(), reference_checksum(n));
        kernel.run();  // repeatable: C is overwritten, not accumulated
        EXPECT_EQ(kernel.checksum(), reference_checksum(n));
        EXPECT_EQ(kernel.n(), n);
        EXPECT_EQ(kernel.dtype(), dtype);
        EXPECT_EQ(kernel.isa(), isa);
      }
    }
  }
}

TEST(MatmulKernel, Work) {
  const MatmulKernel f64(100, Dtype::f64, 3, Isa::baseline);
  EXPECT_DOUBLE_EQ(f64.work().flops, 2.0 * 100 * 100 * 100 * 3);
  EXPECT_DOUBLE_EQ(f64.work().bytes, 3.0 * 100 * 100 * 8 * 3);
  EXPECT_DOUBLE_EQ(f64.work().cycles, 0.0);
  const MatmulKernel f32(64, Dtype::f32, 5, best_isa());
  EXPECT_DOUBLE_EQ(f32.work().flops, 2.0 * 64 * 64 * 64 * 5);
  EXPECT_DOUBLE_EQ(f32.work().bytes, 3.0 * 64 * 64 * 4 * 5);
}

TEST(MatmulKernel, RejectsBadArguments) {
  EXPECT_THROW(MatmulKernel(0, Dtype::f64, 1, Isa::baseline), std::invalid_argument);
  EXPECT_THROW(MatmulKernel(-1, Dtype::f32, 1, Isa::baseline), std::invalid_argument);
  EXPECT_THROW(MatmulKernel(8, Dtype::f64, 0, Isa::baseline), std::invalid_argument);
  EXPECT_THROW(MatmulKernel(8, Dtype::f32, -2, best_isa()), std::invalid_argument);
  try {
    MatmulKernel(8, Dtype::f64, 0, Isa::baseline);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("reps = 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace corenoise

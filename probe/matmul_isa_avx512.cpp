// The matmul micro-kernels for AVX-512F (zmm, 32 registers), instantiated from
// matmul_microkernel.h. probe/CMakeLists.txt compiles this file with the
// -m flags of that ISA; matmul.cpp only calls it when isa_supported().
#include "probe/matmul_isa.h"
#include "probe/matmul_microkernel.h"

namespace corenoise::matmul_detail {
namespace {

// Internal linkage: see the ODR note in matmul_microkernel.h.
struct Avx512Tag {};

// 8 rows x 2 zmm = 16 accumulators.
#ifndef T64
#define T64 8, 2, 256, 128, 2048, 192
#define T32 8, 2, 256, 128, 2048, 256
#endif
using GemmF64 = Gemm<Avx512Tag, double, 64, T64>;
using GemmF32 = Gemm<Avx512Tag, float, 64, T32>;

}  // namespace

std::size_t gemm_f64_avx512_workspace(int n) { return GemmF64::workspace(n); }
std::size_t gemm_f32_avx512_workspace(int n) { return GemmF32::workspace(n); }

void gemm_f64_avx512(int n, const double* a, const double* b, double* c, double* work) {
  GemmF64::run(n, a, b, c, work);
}
void gemm_f32_avx512(int n, const float* a, const float* b, float* c, float* work) {
  GemmF32::run(n, a, b, c, work);
}

}  // namespace corenoise::matmul_detail

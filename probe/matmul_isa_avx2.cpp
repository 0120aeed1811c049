// The matmul micro-kernels for AVX2 + FMA (ymm, 16 registers), instantiated from
// matmul_microkernel.h. probe/CMakeLists.txt compiles this file with the
// -m flags of that ISA; matmul.cpp only calls it when isa_supported().
#include "probe/matmul_isa.h"
#include "probe/matmul_microkernel.h"

namespace corenoise::matmul_detail {
namespace {

// Internal linkage: see the ODR note in matmul_microkernel.h.
struct Avx2Tag {};

// 6 rows x 2 ymm = 12 accumulators + 2 B vectors + 1 broadcast = 15 registers.
using GemmF64 = Gemm<Avx2Tag, double, 32, 6, 2, 256, 120, 2048, 192>;
using GemmF32 = Gemm<Avx2Tag, float, 32, 6, 2, 256, 120, 2048, 192>;

}  // namespace

std::size_t gemm_f64_avx2_workspace(int n) { return GemmF64::workspace(n); }
std::size_t gemm_f32_avx2_workspace(int n) { return GemmF32::workspace(n); }

void gemm_f64_avx2(int n, const double* a, const double* b, double* c, double* work) {
  GemmF64::run(n, a, b, c, work);
}
void gemm_f32_avx2(int n, const float* a, const float* b, float* c, float* work) {
  GemmF32::run(n, a, b, c, work);
}

}  // namespace corenoise::matmul_detail

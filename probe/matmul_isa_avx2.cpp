// The matmul GEMM for AVX2 + FMA (16 ymm registers), instantiated from matmul_microkernel.h.
// probe/CMakeLists.txt compiles this file with that ISA's -m flags;
// matmul.cpp calls it only when isa_supported().
#include "probe/matmul_isa.h"
#include "probe/matmul_microkernel.h"

namespace corenoise::matmul_detail {
namespace {

// Internal linkage: see the ODR note in matmul_microkernel.h.
struct Avx2Tag {};

// 6 rows x 2 ymm = 12 accumulators + 2 B vectors + 1 broadcast = 15 of the
// 16 registers (as OpenBLAS's Haswell kernels). Beat 4x3, 3x4, 5x2, 4x2 and
// 12x1 on Zen 5.
// Template arguments: vector bytes, MR, NR in vectors, KC, MC, NC, direct-path n.
using GemmF64 = Gemm<Avx2Tag, double, 32, 6, 2, 256, 120, 2048, 256>;
using GemmF32 = Gemm<Avx2Tag, float, 32, 6, 2, 256, 120, 2048, 256>;

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

// The matmul micro-kernels for the x86-64 baseline (SSE2, 16 xmm registers, no FMA), instantiated from
// matmul_microkernel.h. probe/CMakeLists.txt compiles this file with the
// -m flags of that ISA; matmul.cpp only calls it when isa_supported().
#include "probe/matmul_isa.h"
#include "probe/matmul_microkernel.h"

namespace corenoise::matmul_detail {
namespace {

// Internal linkage: see the ODR note in matmul_microkernel.h.
struct BaselineTag {};

// 6 rows x 2 xmm = 12 accumulators; mul + add need one temporary.
using GemmF64 = Gemm<BaselineTag, double, 16, 6, 2, 256, 120, 2048, 192>;
using GemmF32 = Gemm<BaselineTag, float, 16, 6, 2, 256, 120, 2048, 192>;

}  // namespace

std::size_t gemm_f64_baseline_workspace(int n) { return GemmF64::workspace(n); }
std::size_t gemm_f32_baseline_workspace(int n) { return GemmF32::workspace(n); }

void gemm_f64_baseline(int n, const double* a, const double* b, double* c, double* work) {
  GemmF64::run(n, a, b, c, work);
}
void gemm_f32_baseline(int n, const float* a, const float* b, float* c, float* work) {
  GemmF32::run(n, a, b, c, work);
}

}  // namespace corenoise::matmul_detail

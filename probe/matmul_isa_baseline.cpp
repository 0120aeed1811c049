// The matmul GEMM for the x86-64 baseline (SSE2, 16 xmm registers, no FMA), instantiated from
// matmul_microkernel.h. probe/CMakeLists.txt compiles this file with that ISA's -m flags;
// matmul.cpp calls it only when isa_supported().
#include "probe/matmul_isa.h"
#include "probe/matmul_microkernel.h"

namespace corenoise::matmul_detail {
namespace {

// Internal linkage: see the ODR note in matmul_microkernel.h.
struct BaselineTag {};

// 3 rows x 4 xmm = 12 accumulators; without FMA each step is a multiply
// into a temporary and an add. 3x4 needs fewer broadcasts (shuffles) per
// FLOP than 6x2 and measured 5-10% faster on Zen 5.
// Template arguments: vector bytes, MR, NR in vectors, KC, MC, NC, direct-path n.
using GemmF64 = Gemm<BaselineTag, double, 16, 3, 4, 256, 126, 2048, 256>;
using GemmF32 = Gemm<BaselineTag, float, 16, 3, 4, 256, 126, 2048, 256>;

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

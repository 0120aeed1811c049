// The matmul GEMM for AVX-512F (32 zmm registers), instantiated from matmul_microkernel.h.
// probe/CMakeLists.txt compiles this file with that ISA's -m flags;
// matmul.cpp calls it only when isa_supported().
#include "probe/matmul_isa.h"
#include "probe/matmul_microkernel.h"

namespace corenoise::matmul_detail {
namespace {

// Internal linkage: see the ODR note in matmul_microkernel.h.
struct Avx512Tag {};

// 8 rows x 2 zmm = 16 accumulators (8x16 f64, 8x32 f32): two FMA pipes of
// latency 4 need 8 in flight. Measured on Zen 5 against 10x2, 12x2, 14x2,
// 6x3, 8x3 and 4x4: none faster, and 8x16 tiles fit n = 64..256 exactly.
// The direct path (no packing) wins up to n = 384 there; n = 512 (4 KiB
// rows) thrashes L1 sets without packing, so it stops at 256.
// Template arguments: vector bytes, MR, NR in vectors, KC, MC, NC, direct-path n.
using GemmF64 = Gemm<Avx512Tag, double, 64, 8, 2, 256, 128, 2048, 256>;
using GemmF32 = Gemm<Avx512Tag, float, 64, 8, 2, 256, 128, 2048, 256>;

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

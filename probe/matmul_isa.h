// Internal to the matmul probe: the per-ISA GEMM entry points that
// matmul_isa_{baseline,avx2,avx512}.cpp export and matmul.cpp dispatches to.
// Each is compiled with its own -m flags, so calling one on a CPU that lacks
// its ISA is undefined (SIGILL); matmul.cpp checks isa_supported() first.
//
// Contract of every gemm_* function: C = A·B for row-major n×n matrices,
// n >= 1, overwriting C; `work` holds at least gemm_*_workspace(n) elements
// and is 64-byte aligned (the packed panels; no allocation inside). Thread
// safety: reentrant, all state is in the arguments.
#pragma once

#include <cstddef>

namespace corenoise::matmul_detail {

std::size_t gemm_f32_baseline_workspace(int n);
std::size_t gemm_f64_baseline_workspace(int n);
void gemm_f32_baseline(int n, const float* a, const float* b, float* c, float* work);
void gemm_f64_baseline(int n, const double* a, const double* b, double* c, double* work);

std::size_t gemm_f32_avx2_workspace(int n);
std::size_t gemm_f64_avx2_workspace(int n);
void gemm_f32_avx2(int n, const float* a, const float* b, float* c, float* work);
void gemm_f64_avx2(int n, const double* a, const double* b, double* c, double* work);

std::size_t gemm_f32_avx512_workspace(int n);
std::size_t gemm_f64_avx512_workspace(int n);
void gemm_f32_avx512(int n, const float* a, const float* b, float* c, float* work);
void gemm_f64_avx512(int n, const double* a, const double* b, double* c, double* work);

}  // namespace corenoise::matmul_detail

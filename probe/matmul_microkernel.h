// Internal to the matmul probe: one GotoBLAS/BLIS-style GEMM, written once
// with GCC vector extensions and instantiated per ISA by
// matmul_isa_{baseline,avx2,avx512}.cpp, each compiled with its own -m flags.
//
// Row-major C = A·B, all n×n. The core is an MR×NR register block: MR rows
// × NR columns of accumulators (NR = kNv vectors) that stay in registers for
// the whole k loop, fed per k by kNv vector loads of a B row and MR
// broadcasts of A elements. Two drivers feed it:
//  - direct (n <= kDirectN, the probe's sizes): no copies; one NR-wide strip
//    of B stays in L1 while A streams from L2. See run_direct for why.
//  - packed (larger n): GotoBLAS loops. For each NC-wide column block and
//    KC-deep slice, pack B into NR-wide k-major panels (zero-padded), then
//    for each MC-tall block pack A into MR-tall panels, and run the block
//    over every (NR panel, MR panel) pair.
// Any n >= 1 works: row edges use the block instantiated for fewer rows;
// column edges compute a full NR from a zero-padded panel and store part.
//
// ODR: each ISA TU compiles this header with different -m flags. Every
// function here is a member of Gemm<Tag, ...>, and each TU passes a Tag
// declared in its own anonymous namespace, so all instantiations have internal
// linkage and the linker can never swap an AVX-512 copy into the baseline
// path. For the same reason this header calls no std:: inline function.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace corenoise::matmul_detail {

// kVectorBytes: SIMD width; kMr rows × kNv vectors: the register block;
// kKc, kMc, kNc: cache blocking of the packed path (kMc a multiple of kMr,
// kNc of the panel width); kDirectN: the largest n run unpacked.
// Thread safety: stateless, reentrant.
template <class Tag, class T, int kVectorBytes, int kMr, int kNv, int kKc, int kMc, int kNc,
          int kDirectN>
struct Gemm {
  typedef T V __attribute__((vector_size(kVectorBytes)));
  static constexpr int kVl = kVectorBytes / static_cast<int>(sizeof(T));
  static constexpr int kNr = kNv * kVl;
  static constexpr int kAlign = 64 / static_cast<int>(sizeof(T));  // elements per cache line
  static_assert(kMc % kMr == 0 && kNc % kNr == 0 && kKc % kAlign == 0,
                "blocks must hold whole panels");

  static int min_int(int x, int y) { return x < y ? x : y; }
  static std::size_t round_up(std::size_t x, std::size_t m) { return (x + m - 1) / m * m; }

  // Elements of the packing workspace gemm needs for size n.
  static std::size_t workspace(int n) {
    const std::size_t kc = min_int(n, kKc);
    const std::size_t nc = round_up(min_int(n, kNc), kNr);
    const std::size_t mc = round_up(min_int(n, kMc), kMr);
    const std::size_t packed = round_up(kc * nc, kAlign) + kKc * mc;
    const std::size_t direct = static_cast<std::size_t>(n) * kNr;  // the edge strip
    return n <= kDirectN && direct > packed ? direct : packed;
  }

  static V loadu(const T* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, V v) { *reinterpret_cast<V*>(p) = v; }  // p vector-aligned
  static void storeu(T* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
  // Broadcast, with intrinsics: GCC turns a generic lane-by-lane splat
  // into a chain of inserts (3x slower on SSE2 f32).
  static V splat(T x) {
    [[maybe_unused]] constexpr bool kF64 = sizeof(T) == 8;
    if constexpr (kVectorBytes == 16) {
      if constexpr (kF64) return (V)_mm_set1_pd(x);
      if constexpr (!kF64) return (V)_mm_set1_ps(x);
#if defined(__AVX__)
    } else if constexpr (kVectorBytes == 32) {
      if constexpr (kF64) return (V)_mm256_set1_pd(x);
      if constexpr (!kF64) return (V)_mm256_set1_ps(x);
#endif
#if defined(__AVX512F__)
    } else if constexpr (kVectorBytes == 64) {
      if constexpr (kF64) return (V)_mm512_set1_pd(x);
      if constexpr (!kF64) return (V)_mm512_set1_ps(x);
#endif
    } else {
      static_assert(kVectorBytes == 0, "vector width not enabled by this TU's -m flags");
    }
  }

  // a·b + c, fused where the ISA has FMA: -std=c++20 implies
  // -ffp-contract=off, so the compiler would not fuse a*b+c by itself.
  static V fmadd(V a, V b, V c) {
    [[maybe_unused]] constexpr bool kF64 = sizeof(T) == 8;
    if constexpr (false) {
#if defined(__FMA__)
    } else if constexpr (kVectorBytes == 32) {
      if constexpr (kF64) return (V)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
      if constexpr (!kF64) return (V)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#endif
#if defined(__AVX512F__)
    } else if constexpr (kVectorBytes == 64) {
      if constexpr (kF64) return (V)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
      if constexpr (!kF64) return (V)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#endif
    } else {
      return a * b + c;  // the x86-64 baseline has no FMA
    }
  }

  // C[M×nr] (+)= A[M×kc]·B[kc×NR]: row i of A at a + i·lda, row k of B at
  // b + k·ldb (NR elements readable). Accumulate when this is not the first
  // KC slice; nr < kNr only at the right edge of C. Not inlined into the
  // drivers: their loop state would take the general registers the
  // broadcast addresses need (the SSE2 build reloaded them from the stack).
  template <int M>
  __attribute__((noinline)) static void micro(int kc, const T* __restrict a, std::ptrdiff_t lda,
                                              const T* __restrict b, std::ptrdiff_t ldb, T* c,
                                              std::ptrdiff_t ldc, bool accumulate, int nr) {
    V acc[M][kNv];
#pragma GCC unroll 32
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
      for (int v = 0; v < kNv; ++v) acc[i][v] = V{};
    }
    for (int k = 0; k < kc; ++k) {
      V bv[kNv];
#pragma GCC unroll 8
      for (int v = 0; v < kNv; ++v) bv[v] = loadu(b + v * kVl);
#pragma GCC unroll 32
      for (int i = 0; i < M; ++i) {
        const V ai = splat(a[i * lda + k]);
#pragma GCC unroll 8
        for (int v = 0; v < kNv; ++v) acc[i][v] = fmadd(ai, bv[v], acc[i][v]);
      }
      b += ldb;
    }
    if (nr == kNr) {
#pragma GCC unroll 32
      for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
        for (int v = 0; v < kNv; ++v) {
          T* p = c + i * ldc + v * kVl;
          storeu(p, accumulate ? acc[i][v] + loadu(p) : acc[i][v]);
        }
      }
      return;
    }
    // Fully unrolled like the rest, so that acc[][] stays in registers.
    alignas(64) T row[kNr];
#pragma GCC unroll 32
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
      for (int v = 0; v < kNv; ++v) store(row + v * kVl, acc[i][v]);
      T* p = c + i * ldc;
      for (int j = 0; j < nr; ++j) p[j] = accumulate ? p[j] + row[j] : row[j];
    }
  }

  // The micro-kernel for mr <= M rows (only the bottom edge has mr < kMr).
  template <int M>
  static void micro_rows(int mr, int kc, const T* a, std::ptrdiff_t lda, const T* b,
                         std::ptrdiff_t ldb, T* c, std::ptrdiff_t ldc, bool accumulate, int nr) {
    if constexpr (M > 1) {
      if (mr < M) {
        micro_rows<M - 1>(mr, kc, a, lda, b, ldb, c, ldc, accumulate, nr);
        return;
      }
    }
    micro<M>(kc, a, lda, b, ldb, c, ldc, accumulate, nr);
  }

  // One NR-wide panel of B[kc×w] (row stride ldb), k-major, zero-padded
  // to NR columns.
  static void pack_b(int kc, int w, const T* b, std::ptrdiff_t ldb, T* out) {
    if (w == kNr) {
      for (int k = 0; k < kc; ++k, b += ldb, out += kNr) {
#pragma GCC unroll 8
        for (int v = 0; v < kNv; ++v) store(out + v * kVl, loadu(b + v * kVl));
      }
      return;
    }
    for (int k = 0; k < kc; ++k, b += ldb, out += kNr) {
      for (int j = 0; j < kNr; ++j) out[j] = j < w ? b[j] : T{};
    }
  }

  // One MR-tall panel of A[h×kc] (row stride lda), rows kKc apart. Rows
  // stay rows: the micro-kernel broadcasts single elements, so a k-major
  // (transposed) panel would buy nothing and its packing costs a transpose.
  // Rows past h at the bottom edge are not written: micro<M> never reads them.
  static void pack_a(int h, int kc, const T* a, std::ptrdiff_t lda, T* out) {
    const int kv = kc / kVl * kVl;
    for (int i = 0; i < h; ++i, a += lda, out += kKc) {
      int k = 0;
      for (; k < kv; k += kVl) store(out + k, loadu(a + k));
      for (; k < kc; ++k) out[k] = a[k];
    }
  }

  // Direct path for n <= kDirectN: no packing but the ragged right edge of
  // B. When A and B already sit in L2, copying them only adds footprint
  // (the copies evict the originals from L1): on Zen 5 packing cost ~20% at
  // n = 64 and ~10% at n = 128, and saved nothing. The loop keeps one
  // NR-wide column strip of B (n·NR elements) in L1 while A streams.
  static void run_direct(int n, const T* a, const T* b, T* c, T* work) {
    const std::ptrdiff_t ld = n;
    for (int jr = 0; jr < n; jr += kNr) {
      const int nr = min_int(kNr, n - jr);
      const T* strip = b + jr;
      std::ptrdiff_t ldb = ld;
      if (nr < kNr) {  // full-width loads would run past the row
        pack_b(n, nr, b + jr, ld, work);
        strip = work;
        ldb = kNr;
      }
      for (int ir = 0; ir < n; ir += kMr) {
        micro_rows<kMr>(min_int(kMr, n - ir), n, a + ir * ld, ld, strip, ldb, c + ir * ld + jr, ld,
                        false, nr);
      }
    }
  }

  // Packed path: the GotoBLAS loops of the comment at the top.
  static void run_packed(int n, const T* a, const T* b, T* c, T* work) {
    const std::ptrdiff_t ld = n;
    T* const bp = work;
    T* const ap =
        work + round_up(static_cast<std::size_t>(min_int(n, kKc)) * round_up(min_int(n, kNc), kNr),
                        kAlign);
    for (int jc = 0; jc < n; jc += kNc) {
      const int nc = min_int(kNc, n - jc);
      for (int pc = 0; pc < n; pc += kKc) {
        const int kc = min_int(kKc, n - pc);
        const bool accumulate = pc > 0;
        for (int jr = 0; jr < nc; jr += kNr) {
          pack_b(kc, min_int(kNr, nc - jr), b + pc * ld + jc + jr, ld, bp + jr * kc);
        }
        for (int ic = 0; ic < n; ic += kMc) {
          const int mc = min_int(kMc, n - ic);
          for (int ir = 0; ir < mc; ir += kMr) {
            pack_a(min_int(kMr, mc - ir), kc, a + (ic + ir) * ld + pc, ld, ap + ir * kKc);
          }
          for (int jr = 0; jr < nc; jr += kNr) {
            const int nr = min_int(kNr, nc - jr);
            for (int ir = 0; ir < mc; ir += kMr) {
              micro_rows<kMr>(min_int(kMr, mc - ir), kc, ap + ir * kKc, kKc, bp + jr * kc, kNr,
                              c + (ic + ir) * ld + jc + jr, ld, accumulate, nr);
            }
          }
        }
      }
    }
  }

  // C = A·B, n×n row-major; work: workspace(n) elements, 64-byte aligned.
  static void run(int n, const T* a, const T* b, T* c, T* work) {
    if (n <= kDirectN) {
      run_direct(n, a, b, c, work);
    } else {
      run_packed(n, a, b, c, work);
    }
  }
};

}  // namespace corenoise::matmul_detail

// Randomized lengths for one core's detour windows in an isolated round.
//
// Why: in isolated rounds the cores take turns window by window, so a
// core's windows would recur at a fixed rhythm (n cores × 25 ms) and noise
// with a period near a multiple of it (20 % every 100 ms on two cores)
// falls always inside or always outside them (docs/validation.md: found in
// 16 and 9 of 20 rounds). Random lengths make every later window's start,
// on this core and on the cores that follow it, a random walk with a
// spread of about a window per window, so the phase against any periodic
// noise is random, at no cost: the round's total detour time is unchanged.
// (A random unmeasured lead before each window would cost its mean in
// round time and, simulated, helps less: the worst period still misses
// ~35 % of rounds with 0–5 ms leads, against ~3 % with these lengths.)
//
// The lengths: each window gets half the nominal, and the other halves are
// pooled and cut at n − 1 uniformly random points (a uniform random
// partition). So, for n windows of nominal length W:
//   sum = n·W exactly;   W/2 ≤ length ≤ W/2 + n·W/2;   mean W.
// The noise ratio stays total lost / total window time (DetourResult::merge).
//
// Pure; draws from the caller's generator (one per probe thread, seeded
// from std::random_device); writes into caller's storage, allocates nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>

namespace corenoise {

inline void draw_detour_windows(std::span<std::uint64_t> out, std::uint64_t nominal_ticks,
                                std::mt19937_64& rng) {
  const std::size_t n = out.size();
  if (n == 0) return;
  const std::uint64_t half = nominal_ticks / 2;
  const std::uint64_t pool = n * nominal_ticks - n * half;
  // Cut points in out[0, n−1), the pool's end last; sorted, their
  // differences are the shares.
  std::uniform_int_distribution<std::uint64_t> cut(0, pool);
  for (std::size_t i = 0; i + 1 < n; ++i) out[i] = cut(rng);
  out[n - 1] = pool;
  std::sort(out.begin(), out.end() - 1);
  for (std::size_t i = n - 1; i > 0; --i) out[i] -= out[i - 1];
  for (auto& length : out) length += half;
}

}  // namespace corenoise

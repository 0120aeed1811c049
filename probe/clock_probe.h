// The clock probe: the effective core clock without privileged counters,
// so it works in VMs and containers. A chain of dependent register-register
// integer adds retires exactly one add per cycle on every modern x86 core
// (register operands, not immediates: some cores fold chains of
// add-immediate at rename). Timed against the constant-rate TSC, adds per
// second is the clock in Hz.
//
// An interruption inflates a chunk's time and would read as a slow clock,
// so a sample is many short chunks and keeps the fastest: the clock probe
// measures frequency, and leaves lost time to the detour probe.
#pragma once

#include <cstdint>

#include "probe/work.h"

namespace corenoise {

class ClockProbe {
 public:
  // `adds_per_chunk` is rounded up to a multiple of the unrolled block.
  explicit ClockProbe(std::uint64_t adds_per_chunk = 32000, int chunks = 24);
  // Effective clock in Hz of the calling thread's core.
  double run() const;
  // Cycles of one chunk (the unit whose time run() keeps).
  KernelWork work() const;

 private:
  std::uint64_t blocks_per_chunk_;
  int chunks_;
};

}  // namespace corenoise

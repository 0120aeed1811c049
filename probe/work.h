// The work a kernel does per run, as data, so that every rate (FLOP/s,
// bytes/s, Hz) is derived in one place from a time (LIKWID's lesson).
#pragma once

namespace corenoise {

struct KernelWork {
  double flops = 0;   // floating-point operations per run
  double bytes = 0;   // bytes moved per run (STREAM convention: reads + writes)
  double cycles = 0;  // core cycles per run where the kernel fixes them (clock probe)
};

}  // namespace corenoise

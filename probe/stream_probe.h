// The stream probe: a STREAM triad (a = b + s·c) over a per-core buffer
// larger than the core's share of the last-level cache, so that it measures
// the core's path to memory: a slow DIMM, a remote NUMA node, or (in
// concurrent mode) bandwidth shared with every other core.
//
// Construct on the pinned thread: the buffers are first-touched there and so
// live on that core's NUMA node.
#pragma once

#include <cstddef>
#include <memory>

#include "probe/work.h"

namespace corenoise {

// Default total buffer size for a core: 4× its LLC share, within
// [8 MiB, 64 MiB]; 8 MiB where the share is unknown or implausible (over
// 64 MiB: VMs report absurd cache sizes). A concurrent round holds one
// buffer per core at once.
std::size_t default_stream_bytes(std::uint64_t llc_share_bytes);

class StreamProbe {
 public:
  explicit StreamProbe(std::size_t total_bytes);
  ~StreamProbe();
  StreamProbe(const StreamProbe&) = delete;
  StreamProbe& operator=(const StreamProbe&) = delete;

  // One triad pass over the buffers.
  void run();
  // STREAM's convention: 24 bytes per element (two reads, one write).
  KernelWork work() const;

 private:
  std::size_t elements_;
  double* a_;
  double* b_;
  double* c_;
};

}  // namespace corenoise

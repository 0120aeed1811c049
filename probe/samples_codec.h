// One CPU's raw samples as bytes, exactly (every double bit for bit), with
// the culprits its own tracer matched: how a rank that probed its own core
// hands its samples to its node's leader, which then judges the node's
// cores together (`sweep --rank-per-core`).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "probe/runner.h"

namespace corenoise {

std::vector<std::byte> encode_samples(const CpuSamples& samples);
// Throws std::invalid_argument on bytes encode_samples did not produce.
CpuSamples decode_samples(std::span<const std::byte> bytes);

}  // namespace corenoise

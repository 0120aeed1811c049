// Records isolated probe rounds as fixture data for the scale simulation
// (tests/bench/scale_sim_bench.cpp): the per-core samples of this machine,
// clean or under injected noise, so that synthetic allocations can be drawn
// from distributions that were really measured rather than assumed.
//
//   record_rounds OUT.bin ROUNDS [CPU_LIST]
//
// Runs ROUNDS isolated rounds with the real Runner at the default
// ProbeSettings on every usable CPU (or CPU_LIST, e.g. "0,1") and appends
// each CPU's samples to OUT.bin. File format (host byte order, little-endian
// on x86), a sequence of records, nothing else:
//
//   uint32 round    index of the round within this recording run (0, 1, …)
//   uint32 length   bytes that follow
//   byte[length]    encode_samples(CpuSamples) (probe/samples_codec.h)
//
// A round is a run of consecutive records with the same round index, so
// several recording runs can be appended to one file. CPUs that could not be
// measured (samples.error) are recorded too; readers skip them.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "probe/cpu_list.h"
#include "probe/runner.h"
#include "probe/samples_codec.h"
#include "probe/settings.h"
#include "probe/topology.h"

int main(int argc, char** argv) {
  using namespace corenoise;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.bin ROUNDS [CPU_LIST]\n", argv[0]);
    return 2;
  }
  const std::string out_path = argv[1];
  const int rounds = std::atoi(argv[2]);
  const Topology topology = Topology::load("native");
  std::vector<unsigned> cpus;
  if (argc > 3) {
    cpus = parse_cpu_list(argv[3]);
  } else {
    for (const auto& pu : topology.pus()) {
      if (pu.usable()) cpus.push_back(pu.cpu);
    }
  }
  std::ofstream out(out_path, std::ios::binary | std::ios::app);
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
    return 1;
  }
  const Runner runner(ProbeSettings{}, topology);
  std::size_t bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    const RoundSamples round = runner.run(Mode::isolated, cpus);
    for (const CpuSamples& s : round.cpus) {
      const std::vector<std::byte> encoded = encode_samples(s);
      const std::uint32_t header[2] = {static_cast<std::uint32_t>(r),
                                       static_cast<std::uint32_t>(encoded.size())};
      out.write(reinterpret_cast<const char*>(header), sizeof header);
      out.write(reinterpret_cast<const char*>(encoded.data()),
                static_cast<std::streamsize>(encoded.size()));
      bytes += sizeof header + encoded.size();
    }
    out.flush();
    if (!out) {
      std::fprintf(stderr, "error writing %s\n", out_path.c_str());
      return 1;
    }
    std::fprintf(stderr, "\rround %d/%d, %zu bytes", r + 1, rounds, bytes);
  }
  std::fprintf(stderr, "\n");
  return 0;
}

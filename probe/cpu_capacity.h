// Each CPU's designed top performance, from /sys: what lets judge() tell a
// core that is slower by design (Intel Turbo Boost Max 3.0 / ITMT favoured
// cores, AMD CPPC preferred cores) from one that is throttled.
//
// Sources, one per machine, since their units differ:
//   cppc     acpi_cppc/highest_perf: ACPI CPPC abstract performance units
//            (nominal_perf is the guaranteed level, lowest_perf the floor);
//   cpufreq  cpufreq/cpuinfo_max_freq in kHz, where there is no acpi_cppc
//            (intel_pstate shows favoured cores' higher maximum there).
// CPPC is chosen if any CPU has a readable highest_perf; a CPU without one
// then has no figure (it is never compared in kHz with others in CPPC units).
// VMs and containers usually have neither: a missing or garbled file is "no
// data", never an error. Only ratios between CPUs of one machine mean
// anything. Pure reads of files; safe from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "probe/topology.h"

namespace corenoise {

enum class TopPerfSource { none, cppc, cpufreq };

struct TopPerf {
  TopPerfSource source = TopPerfSource::none;
  std::map<unsigned, double> by_cpu;  // only CPUs with a positive figure
};

// `sys_root` is normally "/sys"; tests pass fixture trees.
TopPerf read_top_perf(const std::string& sys_root, const std::vector<unsigned>& cpus);
// Sets each PU's top_perf from read_top_perf (left empty where there is none).
void attach_top_perf(std::vector<ProcessingUnit>& pus, const std::string& sys_root);

}  // namespace corenoise

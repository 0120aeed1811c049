#include "probe/cpu_capacity.h"

#include <optional>

#include "probe/sys_file.h"

namespace corenoise {
namespace {

std::string cpu_dir(const std::string& sys_root, unsigned cpu) {
  return sys_root + "/devices/system/cpu/cpu" + std::to_string(cpu);
}

// Zero is no figure: a firmware that leaves the register unset says 0.
std::optional<double> positive(std::optional<std::uint64_t> value) {
  if (!value || *value == 0) return std::nullopt;
  return static_cast<double>(*value);
}

}  // namespace

TopPerf read_top_perf(const std::string& sys_root, const std::vector<unsigned>& cpus) {
  TopPerf cppc{TopPerfSource::cppc, {}}, cpufreq{TopPerfSource::cpufreq, {}};
  for (unsigned cpu : cpus) {
    const std::string dir = cpu_dir(sys_root, cpu);
    if (const auto perf = positive(read_sys_number(dir + "/acpi_cppc/highest_perf"))) {
      cppc.by_cpu[cpu] = *perf;
    }
    if (const auto khz = positive(read_sys_number(dir + "/cpufreq/cpuinfo_max_freq"))) {
      cpufreq.by_cpu[cpu] = *khz;
    }
  }
  if (!cppc.by_cpu.empty()) return cppc;
  if (!cpufreq.by_cpu.empty()) return cpufreq;
  return {};
}

void attach_top_perf(std::vector<ProcessingUnit>& pus, const std::string& sys_root) {
  std::vector<unsigned> cpus;
  for (const auto& pu : pus) cpus.push_back(pu.cpu);
  const TopPerf top = read_top_perf(sys_root, cpus);
  for (auto& pu : pus) {
    const auto it = top.by_cpu.find(pu.cpu);
    pu.top_perf = it != top.by_cpu.end() ? std::optional<double>(it->second) : std::nullopt;
  }
}

}  // namespace corenoise

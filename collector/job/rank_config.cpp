#include "collector/job/rank_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace corenoise {
namespace {

constexpr std::string_view kBlank = " \t\r\n";

// The libraries that size a thread pool from a variable, by a fragment of
// their path, and the variable: libgomp (GCC's OpenMP), OpenBLAS, MKL's
// threading layer, and jaxlib's XLA CPU client (PJRT_NPROC, else NPROC,
// else the CPUs of the affinity: DefaultThreadPoolSize, xla/pjrt/utils.cc).
struct PoolLibrary {
  std::string_view fragment;
  const char* variable;
  const char* alternative;  // also sets the pool's size; null if none
};
constexpr PoolLibrary kPoolLibraries[] = {
    {"libgomp.so", "OMP_NUM_THREADS", nullptr},
    {"libopenblas", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"},
    {"libmkl_", "MKL_NUM_THREADS", "OMP_NUM_THREADS"},
    {"/jaxlib/", "PJRT_NPROC", "NPROC"},
};

bool flag_char(char c) {
  return c == '-' || c == '_' || std::isalnum(static_cast<unsigned char>(c)) != 0;
}

}  // namespace

std::string xla_dropped_words(std::string_view flags) {
  std::size_t b = flags.find_first_not_of(kBlank);
  if (b == std::string_view::npos) return "";
  while (b < flags.size() && flags[b] == '-') {
    std::size_t e = b;
    while (e < flags.size() && flag_char(flags[e])) ++e;
    if (e + 1 < flags.size() && flags[e] == '=' && (flags[e + 1] == '"' || flags[e + 1] == '\'')) {
      const char quote = flags[e + 1];
      e += 2;
      while (e < flags.size() && flags[e] != quote) {
        if (quote == '"' && flags[e] == '\\' && e + 1 < flags.size()) ++e;
        ++e;
      }
      if (e < flags.size()) ++e;
    } else {
      e = flags.find_first_of(kBlank, e);
      if (e == std::string_view::npos) e = flags.size();
    }
    b = flags.find_first_not_of(kBlank, e);
    if (b == std::string_view::npos) return "";
  }
  if (b >= flags.size()) return "";
  std::string_view dropped = flags.substr(b);
  dropped = dropped.substr(0, dropped.find_last_not_of(kBlank) + 1);
  return std::string(dropped);
}

RankConfig read_rank_config(std::string_view maps, const EnvironmentLookup& environment,
                            int busy_threads_peak, int node_cpus) {
  RankConfig config;
  config.busy_threads_peak = busy_threads_peak;
  config.node_cpus = node_cpus;
  std::set<std::string> reported;
  for (std::size_t start = 0; start < maps.size();) {
    std::size_t end = maps.find('\n', start);
    if (end == std::string_view::npos) end = maps.size();
    const std::string_view line = maps.substr(start, end - start);
    start = end + 1;
    const std::size_t slash = line.find('/');
    if (slash == std::string_view::npos) continue;
    const std::string_view path = line.substr(slash);
    const std::string_view base = path.substr(path.rfind('/') + 1);
    for (const PoolLibrary& pool : kPoolLibraries) {
      if (path.find(pool.fragment) == std::string_view::npos) continue;
      const auto set = [&](const char* name) {
        const char* value = name != nullptr ? environment(name) : nullptr;
        return value != nullptr && *value != '\0';
      };
      if (set(pool.variable) || set(pool.alternative)) continue;
      if (!reported.insert(pool.variable).second) continue;
      config.unset_pools.push_back({pool.variable, std::string(base)});
    }
  }
  if (const char* flags = environment("XLA_FLAGS"); flags != nullptr)
    config.xla_dropped = xla_dropped_words(flags);
  return config;
}

std::string binding_domain(const std::vector<ProcessingUnit>& pus,
                           const std::vector<unsigned>& cpus) {
  if (cpus.size() < 2) return "";
  const std::set<unsigned> bound(cpus.begin(), cpus.end());
  std::map<int, std::set<unsigned>> numa, package;
  for (const ProcessingUnit& pu : pus) {
    // A domain as the job's cgroup allows it: PUs outside this rank's
    // affinity belong to it, PUs disallowed to the job do not.
    if (pu.skip_reason.rfind("disallowed", 0) == 0) continue;
    if (pu.numa_node >= 0) numa[pu.numa_node].insert(pu.cpu);
    package[static_cast<int>(pu.package)].insert(pu.cpu);
  }
  // The whole node is no domain binding: that is an unbound rank.
  std::set<unsigned> node;
  for (const auto& [index, members] : package) node.insert(members.begin(), members.end());
  if (bound == node) return "";
  for (const auto& [numa_node, members] : numa) {
    if (members == bound) return "NUMA node " + std::to_string(numa_node);
  }
  for (const auto& [index, members] : package) {
    if (members == bound) return "package " + std::to_string(index);
  }
  return "";
}

}  // namespace corenoise

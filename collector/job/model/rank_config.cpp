#include "collector/job/model/rank_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "probe/cpu_list.h"

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

std::vector<CpuDomain> read_cpu_domains(const std::string& sys_root) {
  namespace fs = std::filesystem;
  std::vector<CpuDomain> domains;
  const auto text = [](const fs::path& path) {
    std::ifstream in(path);
    std::string value;
    std::getline(in, value);
    return value;
  };
  // The number after `prefix` in a directory's name ("node12": 12), or -1.
  const auto number = [](const std::string& name, std::string_view prefix) {
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return -1L;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) return -1L;
    return std::stol(digits);
  };
  std::error_code error;
  std::map<long, std::vector<unsigned>> numa, package;
  for (const auto& entry : fs::directory_iterator(sys_root + "/devices/system/node", error)) {
    const long node = number(entry.path().filename().string(), "node");
    if (node < 0) continue;
    const std::string list = text(entry.path() / "cpulist");
    if (list.empty()) continue;  // a node of memory alone
    try {
      numa[node] = parse_cpu_list(list);
    } catch (const std::invalid_argument&) {
      continue;  // not a CPU list: that node is left out, never guessed
    }
  }
  for (const auto& entry : fs::directory_iterator(sys_root + "/devices/system/cpu", error)) {
    const long cpu = number(entry.path().filename().string(), "cpu");
    const std::string id = text(entry.path() / "topology/physical_package_id");
    if (cpu < 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;
    package[std::stol(id)].push_back(static_cast<unsigned>(cpu));
  }
  for (auto& [node, cpus] : numa) domains.push_back({"NUMA node " + std::to_string(node), cpus});
  for (auto& [id, cpus] : package) {
    std::sort(cpus.begin(), cpus.end());
    domains.push_back({"package " + std::to_string(id), cpus});
  }
  return domains;
}

std::string binding_domain(const std::vector<CpuDomain>& domains,
                           const std::vector<unsigned>& cpus) {
  if (cpus.size() < 2) return "";
  const std::set<unsigned> bound(cpus.begin(), cpus.end());
  // The whole node is no domain binding: that is an unbound rank.
  std::set<unsigned> node;
  for (const CpuDomain& d : domains) node.insert(d.cpus.begin(), d.cpus.end());
  if (bound == node) return "";
  for (const CpuDomain& d : domains) {
    if (std::set<unsigned>(d.cpus.begin(), d.cpus.end()) == bound) return d.name;
  }
  return "";
}

}  // namespace corenoise

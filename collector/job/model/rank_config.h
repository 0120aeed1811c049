// What a rank's own configuration shows, read once at MPI_Finalize: how
// many of its threads were busy at once (proc_sampler.h), the thread-pool
// variables left unset while a library that sizes its pool from them is
// mapped, and the words of XLA_FLAGS that XLA drops. Judged across ranks
// by job_findings.h.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace corenoise {

struct RankConfig {
  int busy_threads_peak = 0;  // 0: not known (a report from spill files)
  int node_cpus = 0;          // CPUs online on the rank's node; 0: not known
  struct UnsetPool {
    std::string variable;  // OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, PJRT_NPROC
    std::string library;   // the mapped file that reads it (its base name)
    bool operator==(const UnsetPool&) const = default;
  };
  std::vector<UnsetPool> unset_pools;
  // XLA_FLAGS from the first word XLA stops at to the end; empty when XLA
  // reads all of it (or it is unset).
  std::string xla_dropped;
  // The NUMA node or package whose CPUs are exactly the rank's affinity
  // (binding_domain); empty for a core, a custom set or not known.
  std::string binding_domain;
  bool operator==(const RankConfig&) const = default;
};

// A NUMA node or a package of the node, and its CPUs.
struct CpuDomain {
  std::string name;  // "NUMA node 1", "package 0"
  std::vector<unsigned> cpus;
};

// The node's NUMA nodes, then its packages, from the kernel's topology
// under `sys_root` (devices/system/node/node*/cpulist, and
// devices/system/cpu/cpu*/topology/physical_package_id): the files hwloc
// reads. Not hwloc itself: this runs inside another program, whose MPI
// may bring an hwloc of its own (Intel MPI's), and two in one process bind
// each other's symbols. Empty where the files are missing.
std::vector<CpuDomain> read_cpu_domains(const std::string& sys_root);

// The domain whose CPUs are exactly `cpus` (two or more): a binding to a
// domain, as Open MPI's default past two ranks per node (to a package, or
// a NUMA domain in later releases); a NUMA node first where both match.
// Empty otherwise, and for the whole node (an unbound rank).
std::string binding_domain(const std::vector<CpuDomain>& domains,
                           const std::vector<unsigned>& cpus);

// What XLA drops of an XLA_FLAGS value: its flag parser
// (ParseArgvFromString, xla/parse_flags_from_env.cc) reads words that
// begin with '-' (a value may be quoted) and stops, silently, at the first
// word that does not; that word and all after it are dropped. A value whose
// first word does not begin with '-' is read as a file name instead, and
// is returned whole.
std::string xla_dropped_words(std::string_view flags);

using EnvironmentLookup = std::function<const char*(const char*)>;

// The rank's configuration: `maps` is the text of /proc/self/maps,
// `environment` the process's getenv; `busy_threads_peak` from its
// sampler. `node_cpus` from sysconf where 0.
RankConfig read_rank_config(std::string_view maps, const EnvironmentLookup& environment,
                            int busy_threads_peak, int node_cpus);

}  // namespace corenoise

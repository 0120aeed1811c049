// The machine's processing units as corenoise sees them, read with hwloc
// from the running machine, an hwloc XML file or a synthetic description.
// A Topology is plain data once loaded (no hwloc handle is kept), so it is
// cheap to copy and safe to share between threads read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corenoise {

struct ProcessingUnit {
  unsigned cpu = 0;            // OS index of the PU (the `cpu` label; joins node_exporter)
  unsigned core = 0;           // logical index of its core, unique on the machine
  unsigned package = 0;        // logical index of its package (socket)
  int numa_node = -1;          // OS index of its (first) NUMA node, -1 if unknown
  std::string kind;            // CPU kind: "default" on single-kind machines; otherwise
                               // hwloc's CoreType (e.g. "IntelCore", "IntelAtom") or "kindN"
  int kind_efficiency = 0;     // hwloc cpukind efficiency rank; higher = faster kind
  std::uint64_t l2_bytes = 0;  // size of the L2 (or nearest) cache above this PU, 0 unknown
  std::uint64_t llc_share_bytes =
      0;  // last-level cache size / number of cores sharing it, 0 unknown
  // Empty if this process may run on the PU; otherwise why it cannot
  // (e.g. "disallowed by cgroup", "outside process affinity", "not this machine").
  std::string skip_reason;
  // Designed top performance (probe/cpu_capacity.h: CPPC highest_perf or
  // max kHz), comparable only with other PUs of this machine; empty where
  // /sys has none. Not from hwloc: set by attach_top_perf / Topology.
  std::optional<double> top_perf;

  bool usable() const { return skip_reason.empty(); }
};

// The skip_reason of a PU the cgroup allows but this process's affinity
// does not (a launcher's binding, taskset): the one reason a process could
// lift itself.
inline constexpr const char* kOutsideAffinity = "outside process affinity";

class Topology {
 public:
  // `spec` is "" or "native" (this machine), "synthetic:DESC" (hwloc synthetic
  // description, e.g. "synthetic:package:2 core:4 pu:2") or a path to an hwloc
  // XML file. Throws std::runtime_error naming the spec and what was expected
  // if it cannot be loaded.
  static Topology load(const std::string& spec);

  // Every PU, sorted by OS index; PUs this process cannot use are included
  // with a skip_reason, never dropped.
  const std::vector<ProcessingUnit>& pus() const { return pus_; }
  // Reads each PU's designed top performance under `sys_root` (normally
  // "/sys"; see probe/cpu_capacity.h). Call once after load, before the
  // Topology is shared between threads.
  void attach_top_perf(const std::string& sys_root);
  // Null if `cpu` is not a PU of this topology.
  const ProcessingUnit* find(unsigned cpu) const;
  // True when the topology describes the running machine (so probes can run).
  bool is_this_system() const { return this_system_; }
  // "native", "synthetic:..." or the XML path, for reports.
  const std::string& source() const { return source_; }

 private:
  std::vector<ProcessingUnit> pus_;
  bool this_system_ = false;
  std::string source_;
};

}  // namespace corenoise

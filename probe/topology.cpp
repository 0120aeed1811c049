#include "probe/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "probe/cpu_capacity.h"

namespace corenoise {
namespace {

constexpr std::string_view kSyntheticPrefix = "synthetic:";
constexpr const char* kExpected =
    "expected 'native', 'synthetic:DESC' or a readable hwloc XML file";

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_t b) const { hwloc_bitmap_free(b); }
};
using BitmapPtr = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

[[noreturn]] void fail(const std::string& spec, const std::string& what) {
  throw std::runtime_error("cannot load topology '" + spec + "': " + what + " (" + kExpected + ")");
}

// hwloc's own XML error is only "invalid argument", so check readability
// first to tell the user about a missing file or a permission problem.
void check_readable(const std::string& spec, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  int err = f ? 0 : errno;
  if (f) {
    errno = 0;
    // A directory opens fine and fails only on read (EISDIR).
    if (std::fgetc(f) == EOF && std::ferror(f)) err = errno ? errno : EIO;
    std::fclose(f);
  }
  if (err != 0) fail(spec, "cannot read topology file " + path + ": " + std::strerror(err));
}

// Configures `topo` for `spec` and loads it; throws on any failure.
void configure_and_load(hwloc_topology_t topo, const std::string& spec) {
  // Disallowed PUs are kept so that a cgroup-restricted daemon still reports
  // them (as skipped) instead of silently shrinking the machine.
  if (hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    fail(spec, std::string("hwloc_topology_set_flags failed: ") + std::strerror(errno));
  }
  if (spec.empty() || spec == "native") {
    // Nothing to set: hwloc discovers the running machine.
  } else if (std::string_view(spec).starts_with(kSyntheticPrefix)) {
    std::string desc = spec.substr(kSyntheticPrefix.size());
    if (desc.empty() || hwloc_topology_set_synthetic(topo, desc.c_str()) != 0) {
      fail(spec, "invalid hwloc synthetic description '" + desc + "'");
    }
  } else {
    check_readable(spec, spec);
    if (hwloc_topology_set_xml(topo, spec.c_str()) != 0) {
      fail(spec, "not a valid hwloc XML topology file " + spec);
    }
    // Without libxml2 (libhwloc-plugins is only a recommendation), hwloc's
    // minimal XML reader accepts any file here and fails only at load: the
    // file is as invalid either way, so say so whichever backend read it.
    if (hwloc_topology_load(topo) != 0) fail(spec, "not a valid hwloc XML topology file " + spec);
    return;
  }
  if (hwloc_topology_load(topo) != 0) {
    fail(spec, std::string("hwloc_topology_load failed: ") + std::strerror(errno));
  }
}

bool is_data_cache(hwloc_obj_t obj) {
  return hwloc_obj_type_is_cache(obj->type) && obj->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION;
}

// Nearest data/unified cache of level >= 2 above the PU: the L2 on every
// current x86 and Arm server, or the next level up where there is no L2.
std::uint64_t l2_bytes(hwloc_obj_t pu) {
  for (hwloc_obj_t o = pu->parent; o != nullptr; o = o->parent) {
    if (is_data_cache(o) && o->attr->cache.depth >= 2) return o->attr->cache.size;
  }
  return 0;
}

// The last-level data/unified cache above the PU, shared evenly by the cores
// under it: what one core can count on when all of them stream at once.
std::uint64_t llc_share_bytes(hwloc_topology_t topo, hwloc_obj_t pu) {
  hwloc_obj_t llc = nullptr;
  for (hwloc_obj_t o = pu->parent; o != nullptr; o = o->parent) {
    if (is_data_cache(o) && (llc == nullptr || o->attr->cache.depth >= llc->attr->cache.depth)) {
      llc = o;
    }
  }
  if (llc == nullptr || llc->attr->cache.size == 0) return 0;
  int sharers = hwloc_get_nbobjs_inside_cpuset_by_type(topo, llc->cpuset, HWLOC_OBJ_CORE);
  if (sharers <= 0) {
    // No Core level (some synthetic or virtual topologies): count PUs.
    sharers = hwloc_get_nbobjs_inside_cpuset_by_type(topo, llc->cpuset, HWLOC_OBJ_PU);
  }
  return llc->attr->cache.size / static_cast<std::uint64_t>(std::max(sharers, 1));
}

void set_kind(hwloc_topology_t topo, hwloc_obj_t pu, ProcessingUnit& out) {
  int nr = hwloc_cpukinds_get_nr(topo, 0);
  int idx = hwloc_cpukinds_get_by_cpuset(topo, pu->cpuset, 0);
  int efficiency = -1;
  unsigned nr_infos = 0;
  hwloc_info_s* infos = nullptr;
  if (idx >= 0) {
    hwloc_cpukinds_get_info(topo, static_cast<unsigned>(idx), nullptr, &efficiency, &nr_infos,
                            &infos, 0);
  }
  out.kind_efficiency = std::max(efficiency, 0);
  // One kind is the same as none: nothing to keep apart when comparing cores.
  if (nr <= 1) {
    out.kind = "default";
    return;
  }
  if (idx < 0) {
    out.kind = "unknown";  // a hybrid machine with a PU hwloc put in no kind
    return;
  }
  for (unsigned i = 0; i < nr_infos; ++i) {
    if (std::strcmp(infos[i].name, "CoreType") == 0) {
      out.kind = infos[i].value;
      return;
    }
  }
  // Kinds told apart only by frequency carry no CoreType; name them by
  // efficiency rank, or by hwloc's index when the rank is unknown.
  out.kind = "kind" + std::to_string(efficiency >= 0 ? efficiency : idx);
}

}  // namespace

Topology Topology::load(const std::string& spec) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    fail(spec, std::string("hwloc_topology_init failed: ") + std::strerror(errno));
  }
  TopologyPtr topo(raw);
  configure_and_load(topo.get(), spec);

  Topology result;
  result.source_ = spec.empty() ? "native" : spec;
  // False for XML and synthetic input, but also for "native" when the
  // HWLOC_XMLFILE/HWLOC_SYNTHETIC environment variables redirect hwloc.
  result.this_system_ = hwloc_topology_is_thissystem(topo.get()) != 0;

  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo.get());
  BitmapPtr affinity;
  if (result.this_system_) {
    affinity.reset(hwloc_bitmap_alloc());
    // The whole process, not the calling thread: a thread already pinned to
    // a housekeeping core must not make the other cores look forbidden.
    if (!affinity || hwloc_get_cpubind(topo.get(), affinity.get(), HWLOC_CPUBIND_PROCESS) != 0) {
      affinity.reset();  // unknown: do not skip anything for affinity
    }
  }

  int n = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_PU);
  result.pus_.reserve(static_cast<std::size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_PU, static_cast<unsigned>(i));
    ProcessingUnit p;
    p.cpu = pu->os_index;
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo.get(), HWLOC_OBJ_CORE, pu);
    // Without a Core level each PU is its own core.
    p.core = core ? core->logical_index : pu->logical_index;
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topo.get(), HWLOC_OBJ_PACKAGE, pu);
    p.package = package ? package->logical_index : 0;
    p.numa_node = pu->nodeset ? hwloc_bitmap_first(pu->nodeset) : -1;
    set_kind(topo.get(), pu, p);
    p.l2_bytes = l2_bytes(pu);
    p.llc_share_bytes = llc_share_bytes(topo.get(), pu);
    if (!result.this_system_) {
      p.skip_reason = "not this machine";
    } else if (!hwloc_bitmap_isset(allowed, pu->os_index)) {
      p.skip_reason = "disallowed by cgroup/cpuset";
    } else if (affinity && !hwloc_bitmap_isset(affinity.get(), pu->os_index)) {
      p.skip_reason = kOutsideAffinity;
    }
    result.pus_.push_back(std::move(p));
  }
  std::sort(result.pus_.begin(), result.pus_.end(),
            [](const ProcessingUnit& a, const ProcessingUnit& b) { return a.cpu < b.cpu; });
  return result;
}

void Topology::attach_top_perf(const std::string& sys_root) {
  corenoise::attach_top_perf(pus_, sys_root);
}

const ProcessingUnit* Topology::find(unsigned cpu) const {
  auto it = std::lower_bound(pus_.begin(), pus_.end(), cpu,
                             [](const ProcessingUnit& p, unsigned c) { return p.cpu < c; });
  return it != pus_.end() && it->cpu == cpu ? &*it : nullptr;
}

}  // namespace corenoise

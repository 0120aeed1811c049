#include "daemon/slurm_job.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

#include "probe/cpu_list.h"

namespace corenoise {
namespace {

// mountinfo escapes a space, tab, newline and backslash as \ooo.
std::string unescaped(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 4 <= field.size()) {
      int value = 0;
      const auto [end, ec] = std::from_chars(field.data() + i + 1, field.data() + i + 4, value, 8);
      if (ec == std::errc() && end == field.data() + i + 4) {
        out += static_cast<char>(value);
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char by) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find(by, at), text.size());
    if (end > at) parts.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

// The first line of `path`, or nullopt if it cannot be read.
std::optional<std::string> first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

}  // namespace

CgroupMounts CgroupMounts::of_this_process() {
  std::ifstream in("/proc/self/mountinfo");
  std::ostringstream text;
  text << in.rdbuf();
  return from_mountinfo(text.str());
}

CgroupMounts CgroupMounts::from_mountinfo(std::string_view text) {
  CgroupMounts mounts;
  for (std::string_view line : split(text, '\n')) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    const std::vector<std::string_view> fields = split(line, ' ');
    std::size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 6 || fields.size() < dash + 4) continue;
    if (unescaped(fields[3]) != "/") continue;
    const std::string directory = unescaped(fields[4]);
    const std::string_view type = fields[dash + 1];
    if (type == "cgroup2") {
      mounts.add("", directory);
    } else if (type == "cgroup") {
      // Its options name its controllers among others (rw, xattr, name=).
      static constexpr std::string_view kControllers[] = {
          "blkio",  "cpu",     "cpuacct",  "cpuset",     "devices", "freezer", "hugetlb",
          "memory", "net_cls", "net_prio", "perf_event", "pids",    "rdma",    "misc"};
      for (std::string_view option : split(fields[dash + 3], ',')) {
        if (std::find(std::begin(kControllers), std::end(kControllers), option) !=
            std::end(kControllers)) {
          mounts.add(std::string(option), directory);
        }
      }
    }
  }
  return mounts;
}

void CgroupMounts::add(std::string hierarchy, std::string directory) {
  directories_.emplace(std::move(hierarchy), std::move(directory));
}

std::optional<std::string> CgroupMounts::directory_of(std::string_view hierarchy) const {
  const std::string_view first = hierarchy.substr(0, hierarchy.find(','));
  const auto it = directories_.find(first);
  if (it == directories_.end()) return std::nullopt;
  return it->second;
}

std::optional<SchedulerJob> confirm_slurm_job(const CgroupMounts& mounts, const SlurmCgroup& cgroup,
                                              pid_t pid) {
  const std::optional<std::string> root = mounts.directory_of(cgroup.hierarchy);
  if (!root || pid <= 0) return std::nullopt;
  std::ifstream procs(*root + cgroup.path + "/cgroup.procs");
  bool listed = false;
  for (std::string line; !listed && std::getline(procs, line);) {
    listed = line == std::to_string(pid);
  }
  if (!listed) return std::nullopt;

  SchedulerJob job{cgroup.job_id, std::nullopt};
  // v2's cpuset beside the job's processes; v1's in the cpuset hierarchy,
  // where Slurm makes the same path.
  std::optional<std::string> cpus;
  if (cgroup.hierarchy.empty()) {
    cpus = first_line(*root + cgroup.job_path + "/cpuset.cpus.effective");
  } else if (const auto cpuset = mounts.directory_of("cpuset")) {
    cpus = first_line(*cpuset + cgroup.job_path + "/cpuset.effective_cpus");
  }
  if (cpus && !cpus->empty()) {
    try {
      job.cpus = parse_cpu_list(*cpus);
    } catch (const std::exception&) {
      job.cpus.reset();  // a file the kernel writes; unreadable means no bound known
    }
  }
  return job;
}

}  // namespace corenoise

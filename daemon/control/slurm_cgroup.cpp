#include "daemon/control/slurm_cgroup.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <vector>

namespace corenoise {
namespace {

// "job_42" -> "42": a decimal number without sign or leading zeros.
std::optional<std::string> numbered(std::string_view component, std::string_view prefix) {
  if (!component.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = component.substr(prefix.size());
  if (digits.empty() || digits.size() > 10 || (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::string(digits);
}

}  // namespace

std::optional<SlurmCgroup> parse_slurm_cgroup(std::string_view line) {
  if (line.size() > kMaxCgroupLineChars) return std::nullopt;
  if (!std::all_of(line.begin(), line.end(), [](char c) { return c >= 0x20 && c <= 0x7e; })) {
    return std::nullopt;
  }
  const std::size_t first = line.find(':');
  const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::string_view id = line.substr(0, first);
  const std::string_view controllers = line.substr(first + 1, second - first - 1);
  const std::string_view path = line.substr(second + 1);
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const bool unified = id == "0" && controllers.empty();
  if (!unified && (id == "0" || controllers.empty())) return std::nullopt;
  if (!path.starts_with('/')) return std::nullopt;

  std::vector<std::string_view> parts;
  for (std::size_t at = 1; at <= path.size();) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    const std::string_view part = path.substr(at, end - at);
    if (part.empty() || part == "." || part == "..") return std::nullopt;
    parts.push_back(part);
    at = end + 1;
  }

  SlurmCgroup cgroup;
  cgroup.hierarchy = std::string(controllers);
  cgroup.path = std::string(path);
  // The job's component: after slurmstepd.scope (v2), or after slurm/uid_U (v1).
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::optional<std::string> job = numbered(parts[i], "job_");
    if (!job) continue;
    const bool v2 = unified && parts[i - 1] == "slurmstepd.scope";
    // "slurm", or "slurm_NODE" where slurmd was built for several on a host
    // (Debian's is: its cgroups are /slurm_HOSTNAME/uid_U/job_N/step_S).
    const bool v1_root = i >= 2 && (parts[i - 2] == "slurm" || parts[i - 2].starts_with("slurm_"));
    const std::optional<std::string> uid =
        !unified && v1_root ? numbered(parts[i - 1], "uid_") : std::nullopt;
    if (!v2 && !uid) continue;
    if (uid) {
      unsigned long value = 0;
      std::from_chars(uid->data(), uid->data() + uid->size(), value);
      if (value >= static_cast<uid_t>(-1)) return std::nullopt;  // (uid_t)-1 is no user
      cgroup.uid = static_cast<uid_t>(value);
    }
    cgroup.job_id = *job;
    for (std::size_t k = 0; k <= i; ++k) cgroup.job_path += "/" + std::string(parts[k]);
    return cgroup;
  }
  return std::nullopt;
}

std::string slurm_cgroup_of_this_process() {
  std::ifstream in("/proc/self/cgroup");
  std::string found;
  for (std::string line; std::getline(in, line);) {
    const std::optional<SlurmCgroup> cgroup = parse_slurm_cgroup(line);
    if (!cgroup) continue;
    if (cgroup->hierarchy.empty()) return line;  // v2's, when both are
    if (found.empty()) found = line;
  }
  return found;
}

}  // namespace corenoise

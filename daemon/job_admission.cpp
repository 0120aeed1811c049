#include "daemon/job_admission.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "probe/cpu_list.h"
#include "probe/proc_text.h"

namespace corenoise {
namespace {

// A status file is a few kB; anything much longer is not the kernel's.
constexpr std::size_t kMaxStatusBytes = 64 * 1024;
// A maps file is ~100 bytes a mapping: 16 MiB is some 150,000 mappings,
// far beyond a rank's. A longer one is read no further (and counts as not
// naming the library), so that no process can make one report stall the
// event loop for long.
constexpr std::size_t kMaxMapsBytes = 16 * 1024 * 1024;

std::string process_file(const std::string& proc_root, pid_t pid, const char* name) {
  return proc_root + "/" + std::to_string(pid) + "/" + name;
}

// The value of the "Name:" line of a status text, or an empty view.
std::string_view status_value(std::string_view text, std::string_view name) {
  while (!text.empty()) {
    std::string_view line = proc_text::next_line(text);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ':') {
      line.remove_prefix(name.size() + 1);
      return line;
    }
  }
  return {};
}

// The path field of a maps line ("start-end perms offset dev inode path"),
// or an empty view for an anonymous mapping.
std::string_view maps_path(std::string_view line) {
  for (int field = 0; field < 5; ++field) {
    if (proc_text::next_token(line).empty()) return {};
  }
  while (!line.empty() && proc_text::is_blank(line.front())) line.remove_prefix(1);
  return line;
}

bool names_job_library(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;  // [heap], [vdso], anonymous
  const std::string_view base = path.substr(path.rfind('/') + 1);
  return base.substr(0, kJobLibraryPrefix.size()) == kJobLibraryPrefix;
}

// The CPUs of `cpus` that are not in `allowed` (both sorted).
std::vector<unsigned> outside(const std::vector<unsigned>& cpus,
                              const std::vector<unsigned>& allowed) {
  std::vector<unsigned> missing;
  std::set_difference(cpus.begin(), cpus.end(), allowed.begin(), allowed.end(),
                      std::back_inserter(missing));
  return missing;
}

// The union of the affinities of `uid`'s live processes under `proc_root`
// that have the job library mapped. One pass over the process directories;
// a process that vanishes meanwhile is skipped.
std::vector<unsigned> ranks_affinity(const std::string& proc_root, uid_t uid) {
  std::vector<unsigned> all;
  std::error_code ec;
  std::filesystem::directory_iterator it(proc_root, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    pid_t pid = 0;
    const auto [last, parsed] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (parsed != std::errc() || last != name.data() + name.size() || pid <= 0) continue;
    const std::optional<ProcessStatus> status = read_process_status(proc_root, pid);
    if (!status || status->effective_uid != uid || !maps_job_library(proc_root, pid)) continue;
    std::vector<unsigned> merged;
    std::set_union(all.begin(), all.end(), status->affinity.begin(), status->affinity.end(),
                   std::back_inserter(merged));
    all = std::move(merged);
  }
  return all;
}

JobAdmissionVerdict refuse(JobRefusal reason, const std::string& why) {
  return {reason, "job: refused (" + std::string(to_string(reason)) + "): " + why};
}

}  // namespace

std::optional<ProcessStatus> read_process_status(const std::string& proc_root, pid_t pid) {
  std::ifstream file(process_file(proc_root, pid, "status"));
  if (!file) return std::nullopt;
  std::string text(kMaxStatusBytes, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(file.gcount()));

  ProcessStatus status;
  // "Uid:\treal\teffective\tsaved\tfs".
  std::string_view uids = status_value(text, "Uid");
  proc_text::next_token(uids);
  const auto effective = proc_text::to_number(proc_text::next_token(uids));
  if (!effective || *effective > static_cast<uid_t>(-1)) return std::nullopt;
  status.effective_uid = static_cast<uid_t>(*effective);

  std::string_view list = status_value(text, "Cpus_allowed_list");
  while (!list.empty() && proc_text::is_blank(list.front())) list.remove_prefix(1);
  try {
    status.affinity = parse_cpu_list(list);
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // garbled: no affinity to trust
  }
  // Absent (an empty list parses): every task may run somewhere.
  if (status.affinity.empty()) return std::nullopt;
  return status;
}

bool maps_job_library(const std::string& proc_root, pid_t pid) {
  std::ifstream file(process_file(proc_root, pid, "maps"));
  std::size_t read = 0;
  for (std::string line; read <= kMaxMapsBytes && std::getline(file, line);) {
    read += line.size() + 1;
    if (names_job_library(maps_path(line))) return true;
  }
  return false;
}

JobAdmission::JobAdmission(std::size_t remembered)
    : capacity_(std::max<std::size_t>(remembered, 1)) {}

JobAdmissionVerdict JobAdmission::admit(const std::string& proc_root,
                                        const std::optional<PeerCredentials>& peer,
                                        const JobRequest& report) {
  if (!peer || peer->pid <= 0) {
    return refuse(JobRefusal::no_credentials,
                  "the kernel gave no credentials (SO_PEERCRED) for the sender");
  }
  const pid_t pid = peer->pid;
  const std::string sender =
      "process " + std::to_string(pid) + " (uid " + std::to_string(peer->uid) + ")";
  const std::optional<ProcessStatus> status = read_process_status(proc_root, pid);
  if (!status) {
    return refuse(JobRefusal::no_credentials,
                  sender + " is no longer running (" + process_file(proc_root, pid, "status") +
                      " is missing, or has no Uid and Cpus_allowed_list)");
  }
  if (status->effective_uid != peer->uid) {
    return refuse(JobRefusal::wrong_user, "process " + std::to_string(pid) + " runs as uid " +
                                              std::to_string(status->effective_uid) +
                                              ", not as the sender's uid " +
                                              std::to_string(peer->uid));
  }
  if (!maps_job_library(proc_root, pid)) {
    return refuse(JobRefusal::not_a_rank, sender + " is not a rank of a job: no " +
                                              std::string(kJobLibraryPrefix) + "* library in " +
                                              process_file(proc_root, pid, "maps") +
                                              " (or corenoised may not read it)");
  }

  std::vector<unsigned> cpus;
  for (const JobCpuLoss& loss : report.cpus) cpus.push_back(loss.cpu);
  std::sort(cpus.begin(), cpus.end());
  // The sender's own affinity first: unbound ranks may use every CPU, and
  // then no other process need be read.
  if (!outside(cpus, status->affinity).empty()) {
    const std::vector<unsigned> missing = outside(cpus, ranks_affinity(proc_root, peer->uid));
    if (!missing.empty()) {
      return refuse(JobRefusal::cpu_outside_affinity,
                    "cpu " + format_cpu_list(missing) + " is outside the affinity of every rank " +
                        "of uid " + std::to_string(peer->uid) +
                        " on this node (the sender's: " + format_cpu_list(status->affinity) + ")");
    }
  }

  std::pair<pid_t, std::string> key{pid, report.job_id};
  if (taken_.contains(key)) {
    return refuse(JobRefusal::duplicate, sender + " already reported job '" + report.job_id + "'");
  }
  if (order_.size() >= capacity_) {
    taken_.erase(order_.front());
    order_.pop_front();
  }
  taken_.insert(key);
  order_.push_back(std::move(key));
  return {};
}

}  // namespace corenoise

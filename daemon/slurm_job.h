// Which Slurm job a rank runs in, in the kernel's words: the cgroup a rank
// names in its `job-start` (daemon/control/slurm_cgroup.h) is believed only
// if that cgroup's cgroup.procs lists the sender's pid while its pidfd says
// the sender still runs. Slurm creates its job cgroups as root and a user
// cannot move a process out of them, so the job id and the job's cpuset
// then come from the scheduler, not from the rank. Both are read from
// cgroupfs, which the packaged unit's ProtectControlGroups= leaves readable
// and ProtectProc= does not hide.
//
// Threading: a CgroupMounts is a plain value; confirm_slurm_job() reads two
// small files and is safe from any thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/control/slurm_cgroup.h"

namespace corenoise {

// Where each cgroup hierarchy is mounted, as this process sees them.
class CgroupMounts {
 public:
  // From /proc/self/mountinfo; empty (nothing confirmed) if unreadable.
  static CgroupMounts of_this_process();
  // From the text of a mountinfo file: cgroup2 mounts are hierarchy "",
  // a cgroup (v1) mount is each controller its options name. A mount of a
  // subtree (its root not "/") is skipped: the paths ranks name start at
  // the hierarchy's root.
  static CgroupMounts from_mountinfo(std::string_view text);

  // `directory` holds `hierarchy` ("" for v2; a v1 controller).
  void add(std::string hierarchy, std::string directory);
  // Where the hierarchy a /proc/PID/cgroup line names is mounted: v2's, or
  // that of the first of its v1 controllers ("cpu,cpuacct": cpu's).
  std::optional<std::string> directory_of(std::string_view hierarchy) const;

 private:
  std::map<std::string, std::string, std::less<>> directories_;
};

// A Slurm job as the kernel's cgroups say.
struct SchedulerJob {
  std::string id;  // Slurm's job id: "42"
  // The job's cpuset (cpuset.cpus.effective, v1's cpuset.effective_cpus);
  // nullopt where it has none (no cpuset controller in its hierarchy).
  std::optional<std::vector<unsigned>> cpus;
};

// The job of `cgroup` if its cgroup.procs lists `pid`, else nullopt (the
// hierarchy not mounted here, the cgroup gone or unreadable, the pid not in
// it). The caller checks that the pid's pidfd still runs afterwards: then
// the pid was that process when the file was read.
std::optional<SchedulerJob> confirm_slurm_job(const CgroupMounts& mounts, const SlurmCgroup& cgroup,
                                              pid_t pid);

}  // namespace corenoise

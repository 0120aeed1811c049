// What the kernel says about the process on the other end of a control
// connection, asked without /proc and without a capability: the packaged
// daemon runs as its own user with ProtectProc=invisible, where other users'
// /proc/PID directories do not exist (docs/control.md, "Threat model").
//
//   - a pidfd pins the process: SO_PEERPIDFD (Linux >= 6.5) gives the one
//     that connected, or none if it has exited; older kernels get
//     pidfd_open(pid) at accept, which a pid recycled between connect() and
//     accept() would fool;
//   - PIDFD_GET_INFO (Linux >= 6.13) says its user now;
//   - sched_getaffinity(pid) says where it may run (no permission check);
//   - cgroupfs says which Slurm job it runs in, where it names one
//     (daemon/slurm_job.h).
//
// ProcessFacts is the interface job admission asks (daemon/job_admission.h),
// so that its unit tests can state facts a test process could not arrange;
// KernelProcessFacts asks the kernel.
//
// Threading: every function is safe from any thread; a ProcessWatch is
// used from one thread at a time.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "daemon/control/control_requests.h"
#include "daemon/slurm_job.h"

namespace corenoise {

// A pidfd of the peer of connected Unix socket `socket_fd`, whose
// SO_PEERCRED pid is `pid`, owned by the caller (close-on-exec); -1 where
// the kernel has neither SO_PEERPIDFD nor pidfd_open, or the process is
// gone.
int open_peer_pidfd(int socket_fd, pid_t pid);

// Whether one process, seen once, is still running: it holds what it needs
// (a pidfd) for as long as it lives.
class ProcessWatch {
 public:
  virtual ~ProcessWatch() = default;
  virtual bool running() const = 0;
};

class ProcessFacts {
 public:
  virtual ~ProcessFacts() = default;
  // True while the peer's process is still the one that connected and has
  // not exited. False without a pidfd.
  virtual bool running(const PeerCredentials& peer) const = 0;
  // The peer's effective uid now; nullopt where the kernel does not say.
  virtual std::optional<uid_t> effective_uid(const PeerCredentials& peer) const = 0;
  // The CPUs the peer's process may run on (sorted OS indices); nullopt if
  // the kernel did not say (the process is gone).
  virtual std::optional<std::vector<unsigned>> affinity(const PeerCredentials& peer) const = 0;
  // A watch on the peer's process that outlives the connection; nullptr
  // without a pidfd.
  virtual std::unique_ptr<ProcessWatch> watch(const PeerCredentials& peer) const = 0;
  // The Slurm job of `cgroup`, the cgroup the peer names, if the kernel
  // says the peer runs in it; nullopt if not, or not any more.
  virtual std::optional<SchedulerJob> slurm_job(const PeerCredentials& peer,
                                                const SlurmCgroup& cgroup) const = 0;
};

class KernelProcessFacts final : public ProcessFacts {
 public:
  // `mounts`: where this process sees the cgroup hierarchies.
  explicit KernelProcessFacts(CgroupMounts mounts = CgroupMounts::of_this_process())
      : mounts_(std::move(mounts)) {}
  bool running(const PeerCredentials& peer) const override;
  std::optional<uid_t> effective_uid(const PeerCredentials& peer) const override;
  std::optional<std::vector<unsigned>> affinity(const PeerCredentials& peer) const override;
  std::unique_ptr<ProcessWatch> watch(const PeerCredentials& peer) const override;
  std::optional<SchedulerJob> slurm_job(const PeerCredentials& peer,
                                        const SlurmCgroup& cgroup) const override;

 private:
  CgroupMounts mounts_;
};

}  // namespace corenoise

#include "daemon/peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace corenoise {
namespace {

// Debian 12's kernel headers (6.1) predate both; the values are the
// kernel's ABI, and an older kernel answers ENOPROTOOPT or ENOTTY.
constexpr int kSoPeerPidfd = 77;  // SO_PEERPIDFD, Linux 6.5

// struct pidfd_info of <linux/pidfd.h>, Linux 6.13: its first 64 bytes,
// which every kernel that has the ioctl fills.
struct PidfdInfo {
  std::uint64_t mask;
  std::uint64_t cgroupid;
  std::uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  std::uint32_t spare;
};
static_assert(sizeof(PidfdInfo) == 64);
constexpr std::uint64_t kPidfdInfoCreds = 1u << 1;
constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);

// The largest CPU set the kernel's sched_getaffinity will fill: systemd's
// largest too (CPU_SET_MAX_NCPU, the unit's CPUAffinity=0-8191).
constexpr int kMaxCpus = 8192;

bool pidfd_running(int pidfd) {
  if (pidfd < 0) return false;
  // A pidfd polls readable once its process has exited.
  pollfd p{pidfd, POLLIN, 0};
  const int rc = ::poll(&p, 1, 0);
  return rc == 0;
}

class PidfdWatch final : public ProcessWatch {
 public:
  explicit PidfdWatch(int pidfd) : pidfd_(pidfd) {}
  ~PidfdWatch() override { ::close(pidfd_); }
  PidfdWatch(const PidfdWatch&) = delete;
  PidfdWatch& operator=(const PidfdWatch&) = delete;
  bool running() const override { return pidfd_running(pidfd_); }

 private:
  int pidfd_;
};

}  // namespace

int open_peer_pidfd(int socket_fd, pid_t pid) {
  int pidfd = -1;
  socklen_t length = sizeof pidfd;
  if (::getsockopt(socket_fd, SOL_SOCKET, kSoPeerPidfd, &pidfd, &length) == 0) {
    return length == sizeof pidfd && pidfd >= 0 ? pidfd : -1;  // close-on-exec by the kernel
  }
  // A kernel with the option that cannot give it says the peer has exited
  // (ESRCH, ENODATA, EINVAL): opening its pid now could pin another process.
  if (errno != ENOPROTOOPT || pid <= 0) return -1;
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);  // close-on-exec by definition
  return fd >= 0 ? static_cast<int>(fd) : -1;
}

bool KernelProcessFacts::running(const PeerCredentials& peer) const {
  return pidfd_running(peer.pidfd);
}

std::optional<uid_t> KernelProcessFacts::effective_uid(const PeerCredentials& peer) const {
  if (peer.pidfd < 0) return std::nullopt;
  PidfdInfo info{};
  info.mask = kPidfdInfoCreds;
  if (::ioctl(peer.pidfd, kPidfdGetInfo, &info) != 0 || (info.mask & kPidfdInfoCreds) == 0) {
    return std::nullopt;  // ENOTTY before 6.13; ESRCH once it exited
  }
  return static_cast<uid_t>(info.euid);
}

std::optional<std::vector<unsigned>> KernelProcessFacts::affinity(
    const PeerCredentials& peer) const {
  if (peer.pid <= 0) return std::nullopt;
  cpu_set_t* set = CPU_ALLOC(kMaxCpus);
  if (set == nullptr) return std::nullopt;
  const std::size_t size = CPU_ALLOC_SIZE(kMaxCpus);
  CPU_ZERO_S(size, set);
  std::optional<std::vector<unsigned>> cpus;
  if (::sched_getaffinity(peer.pid, size, set) == 0) {
    cpus.emplace();
    for (int cpu = 0; cpu < kMaxCpus; ++cpu) {
      if (CPU_ISSET_S(cpu, size, set)) cpus->push_back(static_cast<unsigned>(cpu));
    }
  }
  CPU_FREE(set);
  // Asked by pid: if the process exited meanwhile, the pid may already name
  // another; the pidfd says whether the answer was still the peer's.
  if (cpus && !running(peer)) return std::nullopt;
  return cpus;
}

std::unique_ptr<ProcessWatch> KernelProcessFacts::watch(const PeerCredentials& peer) const {
  if (peer.pidfd < 0) return nullptr;
  const int copy = ::fcntl(peer.pidfd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return nullptr;
  return std::make_unique<PidfdWatch>(copy);
}

std::optional<SchedulerJob> KernelProcessFacts::slurm_job(const PeerCredentials& peer,
                                                          const SlurmCgroup& cgroup) const {
  std::optional<SchedulerJob> job = confirm_slurm_job(mounts_, cgroup, peer.pid);
  // Still running after the read: the pid in cgroup.procs was the peer's.
  if (!job || !running(peer)) return std::nullopt;
  return job;
}

}  // namespace corenoise

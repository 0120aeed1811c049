// Sends control-socket request lines to corenoised from one connection and
// prints each reply line: the sender of the daemon's job-report admission
// tests. Preloaded with the in-job library (LD_PRELOAD=...libcorenoise-job-
// mpich.so, which does nothing without MPI_Init) it is a process with the
// job library mapped, as a rank is; without, a plain process.
//
//   job_report_sender [--drop-to UID:GID] SOCKET LINE...
//
// --drop-to: become UID:GID (no supplementary groups) after connecting and
// before sending, so that the connection's SO_PEERCRED credentials are no
// longer the process's. Exit 0 once every reply came, 1 otherwise.
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr, "usage: job_report_sender [--drop-to UID:GID] SOCKET LINE...\n");
  return 1;
}

bool send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  long uid = -1, gid = -1;
  if (!args.empty() && args[0] == "--drop-to") {
    if (args.size() < 2 || std::sscanf(args[1].c_str(), "%ld:%ld", &uid, &gid) != 2) return usage();
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return usage();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (args[0].size() >= sizeof address.sun_path) return usage();
  std::memcpy(address.sun_path, args[0].c_str(), args[0].size() + 1);

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "job_report_sender: connect %s: %s\n", args[0].c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (uid >= 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
                   ::setresuid(uid, uid, uid) != 0)) {
    std::fprintf(stderr, "job_report_sender: cannot become %ld:%ld: %s\n", uid, gid,
                 std::strerror(errno));
    return 1;
  }
  timeval timeout{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string pending;
  for (std::size_t i = 1; i < args.size(); ++i) {
    // One line at a time, each reply read before the next is sent, so the
    // replies come back in order whatever the daemon does with the line.
    if (!send_all(fd, args[i] + "\n")) return 1;
    std::size_t end;
    while ((end = pending.find('\n')) == std::string::npos) {
      char buffer[4096];
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return 1;
      pending.append(buffer, static_cast<std::size_t>(n));
    }
    std::printf("%s\n", pending.substr(0, end).c_str());
    std::fflush(stdout);
    pending.erase(0, end + 1);
  }
  ::close(fd);
  return 0;
}

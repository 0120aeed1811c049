// Sends control-socket request lines to corenoised from one connection and
// prints each reply line: the sender of the daemon's job admission tests,
// which play each forgery of docs/control.md's threat model with it.
//
//   job_report_sender [--drop-to UID:GID] [--hand-to-child] SOCKET LINE...
//
// --drop-to: become UID:GID (no supplementary groups) after connecting and
// before sending, so that the connection's SO_PEERCRED credentials are no
// longer the process's.
// --hand-to-child: after connecting, fork; the process that connected
// exits, and its child sends on the inherited connection once it has gone
// (the pid the daemon was given no longer names the sender).
// A line "@now" in LINE is replaced by the Unix time when it is sent, so
// that a report can say it ended just now. Exit 0 once every reply came, 1
// otherwise.
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: job_report_sender [--drop-to UID:GID] [--hand-to-child] SOCKET LINE...\n");
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
  bool hand_to_child = false;
  for (;;) {
    if (!args.empty() && args[0] == "--drop-to") {
      if (args.size() < 2 || std::sscanf(args[1].c_str(), "%ld:%ld", &uid, &gid) != 2) {
        return usage();
      }
      args.erase(args.begin(), args.begin() + 2);
    } else if (!args.empty() && args[0] == "--hand-to-child") {
      hand_to_child = true;
      args.erase(args.begin());
    } else {
      break;
    }
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
  if (hand_to_child) {
    // One round trip first: the daemon has accepted the connection (and
    // taken its pidfd) before the process that made it exits.
    const std::string status = "{\"command\":\"status\"}\n";
    if (!send_all(fd, status)) return 1;
    for (char c = 0; c != '\n';) {
      if (::read(fd, &c, 1) != 1) return 1;
    }
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) return 1;
    if (child > 0) {
      // The child prints the replies; this process only has to go.
      ::_exit(0);
    }
    while (::getppid() == parent) ::usleep(1000);
  }
  std::string pending;
  for (std::size_t i = 1; i < args.size(); ++i) {
    // One line at a time, each reply read before the next is sent, so the
    // replies come back in order whatever the daemon does with the line.
    std::string line = args[i];
    for (std::size_t at; (at = line.find("@now")) != std::string::npos;) {
      timespec now{};
      ::clock_gettime(CLOCK_REALTIME, &now);
      line.replace(at, 4,
                   std::to_string(now.tv_sec) + "." + std::to_string(now.tv_nsec / 100000000));
    }
    if (!send_all(fd, line + "\n")) return 1;
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

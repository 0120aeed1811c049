// A real corenoised started under a wrapper command: setpriv, to run it as
// another user, or strace, to watch what it executes. Its stdout and
// stderr go to a file (the wrapper may run as a user who cannot write to
// the test's pipe). DaemonProcess (daemon_process.h) execs the daemon
// directly and covers everything else.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "reachable_binary.h"

namespace corenoise::testing {

// Drops to nobody/nogroup with no supplementary groups, then execs.
inline std::vector<std::string> as_nobody() {
  return {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"};
}

class WrappedDaemon {
 public:
  // `binary`: the daemon to run; by default this build's, or a copy of it
  // that the user the wrapper becomes can execute (reachable_binary.h).
  WrappedDaemon(const std::vector<std::string>& wrapper, const std::vector<std::string>& args,
                std::string log_path, std::string binary = reachable_by_everyone(CORENOISED_BIN))
      : log_path_(std::move(log_path)), binary_(std::move(binary)) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      std::vector<char*> argv;
      for (const auto& w : wrapper) argv.push_back(const_cast<char*>(w.c_str()));
      argv.push_back(const_cast<char*>(binary_.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~WrappedDaemon() {
    if (inner_ > 0) kill(inner_, SIGKILL);  // a tracee outlives a killed tracer
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  WrappedDaemon(const WrappedDaemon&) = delete;
  WrappedDaemon& operator=(const WrappedDaemon&) = delete;

  // The wrapper's pid: the daemon's own when the wrapper execs it (setpriv).
  pid_t pid() const { return pid_; }
  const std::string& binary() const { return binary_; }
  // A daemon the wrapper forked (strace): killed too when the test ends.
  void adopt(pid_t inner) { inner_ = inner; }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  bool wait_for_log(const std::string& text,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  int port() const {
    if (!wait_for_log("exporter listening on ")) return -1;
    return exporter_port_in(log());
  }
  // Exit status of the wrapper (128 + signal if killed), or nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    const std::optional<int> status = wait_for_exit(pid_, timeout);
    if (status) exited_ = true;
    return status;
  }

 private:
  std::string log_path_;
  std::string binary_;
  pid_t pid_ = -1;
  pid_t inner_ = -1;
  bool exited_ = false;
};

}  // namespace corenoise::testing

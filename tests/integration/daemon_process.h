// A real corenoised for tests: started with fork/exec, its stderr collected
// on a thread so a test can wait for a log line, stopped with a signal.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace corenoise::testing {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/corenoise-it-XXXXXX";
    path_ = mkdtemp(name);
    std::filesystem::permissions(path_, std::filesystem::perms::all);  // for the nobody test
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The exporter's port in a daemon's log ("exporter listening on HOST:PORT"),
// or -1.
inline int exporter_port_in(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("exporter listening on [0-9.]+:([0-9]+)"))) return -1;
  return std::stoi(m[1]);
}

// A daemon command line from `defaults` (NAME, VALUE) and `changes`, given
// as NAME VALUE ...: a change replaces the value of an option already
// there, an empty value drops the option (the config file sets it then),
// and the others are added.
inline std::vector<std::string> merged_options(
    std::vector<std::pair<std::string, std::string>> defaults,
    const std::vector<std::string>& changes) {
  for (std::size_t i = 0; i + 1 < changes.size(); i += 2) {
    const auto same = std::find_if(defaults.begin(), defaults.end(),
                                   [&](const auto& o) { return o.first == changes[i]; });
    if (same == defaults.end()) {
      defaults.emplace_back(changes[i], changes[i + 1]);
    } else if (changes[i + 1].empty()) {
      defaults.erase(same);
    } else {
      same->second = changes[i + 1];
    }
  }
  std::vector<std::string> args;
  for (const auto& [name, value] : defaults) args.insert(args.end(), {name, value});
  return args;
}

// The exit status of child `pid` (128 + signal if killed), or nullopt if it
// is still running after `timeout`; reaps it.
inline std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  do {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(5ms);
  } while (std::chrono::steady_clock::now() < end);
  return std::nullopt;
}

class DaemonProcess {
 public:
  DaemonProcess(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv{const_cast<char*>(CORENOISED_BIN)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    reader_ = std::thread([this, fd = fds[0]] {
      char buffer[4096];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof buffer)) > 0) {
        std::lock_guard lock(mutex_);
        log_.append(buffer, static_cast<std::size_t>(n));
      }
      close(fd);
    });
  }
  // Stops it as systemd would, with SIGTERM, so that every test also ends
  // with a clean shutdown (and, in an ASan build, the daemon's leak check);
  // SIGKILL only if it has not left after 10 s.
  ~DaemonProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGTERM);
      if (!wait_for_exit(pid_, 10s)) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
    }
    if (reader_.joinable()) reader_.join();
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string log() const {
    std::lock_guard lock(mutex_);
    return log_;
  }
  // Waits until the log contains `text`; false on timeout or exit.
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout = 20s) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // The exporter's port, from "exporter listening on HOST:PORT".
  int port() const {
    if (!wait_for_log("exporter listening on ")) return -1;
    return exporter_port_in(log());
  }
  void signal(int sig) const { kill(pid_, sig); }
  // Exit status, or nullopt if still running after `timeout`.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    const std::optional<int> status = wait_for_exit(pid_, timeout);
    if (status) exited_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::string log_;
};

// GET http://127.0.0.1:port/path; returns the body ("" on any failure) and
// the status code.
inline std::pair<int, std::string> http_get(int port, const std::string& path,
                                            const std::string& method = "GET") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return {0, ""};
  }
  const std::string request =
      method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (write(fd, request.data(), request.size()) < 0) {
    close(fd);
    return {0, ""};
  }
  std::string response;
  char buffer[65536];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0)
    response.append(buffer, static_cast<std::size_t>(n));
  close(fd);
  int status = 0;
  if (response.rfind("HTTP/", 0) == 0)
    status = std::atoi(response.c_str() + response.find(' ') + 1);
  const auto body = response.find("\r\n\r\n");
  return {status, body == std::string::npos ? "" : response.substr(body + 4)};
}

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick),
// for a server that must be told its port.
inline int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// `text` percent-encoded for a URL's query string.
inline std::string url_encoded(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// The value of the series `name{labels}` in exposition text (labels as
// printed, e.g. cpu="1",state="noisy"), if present.
inline std::optional<double> metric_value(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

}  // namespace corenoise::testing

// A raw client of corenoised's control socket for tests that must send what
// the `corenoise` command never would (half lines, garbage, a thousand
// connections). Every call is bounded by a timeout, so a daemon that stops
// answering fails the test instead of hanging it.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace corenoise::testing {

// A connected socket (closed by the destructor), or fd() < 0.
class ControlSocket {
 public:
  explicit ControlSocket(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    // Bounds a connect that waits on a full backlog.
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      error_ = errno;
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~ControlSocket() { close(); }
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  int fd() const { return fd_; }
  int connect_error() const { return error_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // All of `bytes`; false if the daemon closed the connection (no SIGPIPE).
  bool send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

  // The next line without its '\n'; "" on EOF, error or timeout (with
  // timed_out() telling which).
  std::string read_line(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    timed_out_ = false;
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out_ = true;
        return "";
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return "";  // EOF, or ECONNRESET after a refusal
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  bool timed_out() const { return timed_out_; }

  // True once the daemon has closed its end (EOF or reset) within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    while (!read_line(timeout).empty()) {
    }
    return !timed_out_;
  }

  // One request, its reply parsed (a null json if none came).
  nlohmann::json request(const std::string& line) {
    if (!send(line + "\n")) return nullptr;
    const std::string reply = read_line();
    return nlohmann::json::parse(reply, nullptr, false).is_discarded()
               ? nullptr
               : nlohmann::json::parse(reply);
  }

 private:
  int fd_ = -1;
  int error_ = 0;
  bool timed_out_ = false;
  std::string buffer_;
};

}  // namespace corenoise::testing

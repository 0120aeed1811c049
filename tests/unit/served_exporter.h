// The exporter as the daemon runs it, for the tests: on an event loop of
// its own thread, and a minimal blocking HTTP/1.1 client over loopback.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace corenoise {

// An io_context run by one thread from start() to stop() (or destruction).
// Make the Exporter before start() and destroy it after stop(), as the
// daemon does on its own loop.
struct ExporterLoop {
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard;
  std::thread thread;

  void start() {
    guard.emplace(io.get_executor());
    thread = std::thread([this] { io.run(); });
  }
  void stop() {
    guard.reset();
    io.stop();
    if (thread.joinable()) thread.join();
  }
  ~ExporterLoop() { stop(); }
};

struct HttpResponse {
  int status = 0;
  std::string headers;  // lower-cased header block, without the status line
  std::string body;
};

// A TCP connection to 127.0.0.1:port whose reads time out after
// `timeout_seconds` (a hung server fails a test instead of hanging it);
// -1 if it cannot connect. `from`: the source address, another of 127/8
// (e.g. "127.0.0.2") to be another peer to the server; null for the kernel's
// choice (127.0.0.1).
inline int connect_loopback(int port, long timeout_seconds = 10, const char* from = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{timeout_seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (from != nullptr) {
    sockaddr_in source{};
    source.sin_family = AF_INET;
    if (::inet_pton(AF_INET, from, &source.sin_addr) != 1 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline HttpResponse http(int port, const std::string& method, const std::string& path,
                         const std::string& extra_headers = "", const char* from = nullptr) {
  const int fd = connect_loopback(port, 10, from);
  if (fd < 0) throw std::runtime_error("connect failed");
  const std::string request = method + " " + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                              "Content-Length: 0\r\n" +
                              extra_headers + "\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  HttpResponse r;
  const std::size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) throw std::runtime_error("no HTTP header in: " + raw);
  std::sscanf(raw.c_str(), "HTTP/1.%*d %d", &r.status);
  r.headers = raw.substr(raw.find("\r\n") + 2, end - raw.find("\r\n"));
  for (char& c : r.headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.body = raw.substr(end + 4);
  return r;
}

}  // namespace corenoise

#include "daemon/control/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "probe/units.h"

namespace corenoise {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A reply larger than this is a broken daemon, not a big node (the results
// of a few hundred CPUs are well under a megabyte).
constexpr std::size_t kMaxReplyBytes = 256u << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string seconds_text(milliseconds d) {
  return short_seconds_text(static_cast<double>(d.count()) / 1000);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits for `events` until the deadline; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw std::system_error(errno, std::system_category(), "poll");
  }
}

std::runtime_error unreachable(const std::string& where, const std::string& why) {
  return std::runtime_error("cannot reach " + where + ": " + why);
}

sockaddr_un socket_address(const std::string& path, const std::string& where) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    throw unreachable(where, "not a valid socket path (1 to " +
                                 std::to_string(sizeof address.sun_path - 1) + " bytes)");
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

// Why connect() failed with `error`, in words that say what to check.
std::runtime_error connect_error(int error, const char* path, const std::string& where) {
  switch (error) {
    case ENOENT:
      return unreachable(where,
                         "no such socket (is corenoised running? --socket or $CORENOISE_SOCKET "
                         "choose another)");
    case EACCES:
    case EPERM:
      return unreachable(
          where, "permission denied (the socket is for root and the daemon's control group)");
    case ECONNREFUSED: {
      // Linux also answers ECONNREFUSED for a path that is no socket.
      struct stat st {};
      if (::stat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        return unreachable(where, "not a socket (check --socket or $CORENOISE_SOCKET)");
      }
      return unreachable(where,
                         "connection refused (the socket is left over: corenoised is not running)");
    }
    case ENOTSOCK:
      return unreachable(where, "not a socket (is corenoised running? check --socket)");
    default:
      return unreachable(where, std::string(std::strerror(error)) + " (is corenoised running?)");
  }
}

// Connects `fd` to `address`. A Unix socket connects at once or fails at
// once; the one wait is a listener whose backlog is full (EAGAIN), retried
// until the deadline.
void connect_socket(int fd, const sockaddr_un& address, const std::string& where,
                    milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return;
    int error = errno;
    if (error == EINTR) continue;
    if (error == EAGAIN) {
      if (Clock::now() >= deadline) {
        throw unreachable(where, "the daemon accepts no connection within " +
                                     seconds_text(timeout) + " (it may be overloaded or stuck)");
      }
      std::this_thread::sleep_for(milliseconds(10));
      continue;
    }
    if (error == EINPROGRESS) {
      if (!wait_for(fd, POLLOUT, deadline)) {
        throw unreachable(
            where, "no connection within " + seconds_text(timeout) + " (is corenoised running?)");
      }
      socklen_t length = sizeof error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error == 0) return;
    }
    throw connect_error(error, address.sun_path, where);
  }
}

// One request and its reply on a connected socket, within one deadline.
struct Exchange {
  int fd;
  const std::string& where;
  Clock::time_point deadline;
  milliseconds timeout;

  std::runtime_error no_reply() const {
    return std::runtime_error("no reply from " + where + " within " + seconds_text(timeout) +
                              " (the daemon may be busy, stuck or not running)");
  }
};

// Sends `line`. A daemon that refuses the connection (too many clients, a
// line too long) replies and closes; its reply is still read after.
void send_line(const Exchange& exchange, const std::string& line) {
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(exchange.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(exchange.fd, POLLOUT, exchange.deadline)) throw exchange.no_reply();
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return;
    throw std::runtime_error("cannot send to " + exchange.where + ": " + std::strerror(errno));
  }
}

// Reads one line, without its '\n'.
std::string read_line(const Exchange& exchange) {
  std::string reply;
  char buffer[65536];
  for (;;) {
    if (const auto end = reply.find('\n'); end != std::string::npos) {
      reply.resize(end);
      return reply;
    }
    if (reply.size() > kMaxReplyBytes) {
      throw std::runtime_error(exchange.where + " sent a reply longer than " +
                               std::to_string(kMaxReplyBytes) + " bytes");
    }
    const ssize_t n = ::recv(exchange.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      reply.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(exchange.fd, POLLIN, exchange.deadline)) throw exchange.no_reply();
      continue;
    }
    if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
      throw std::runtime_error(exchange.where +
                               " closed the connection without replying (the daemon may have "
                               "stopped, or is not running)");
    }
    throw std::runtime_error("cannot read from " + exchange.where + ": " + std::strerror(errno));
  }
}

}  // namespace

std::chrono::milliseconds default_reply_timeout(const ControlRequest& request) {
  if (std::holds_alternative<RunRequest>(request) ||
      std::holds_alternative<CalibrateRequest>(request)) {
    return std::chrono::seconds(120);
  }
  return std::chrono::seconds(10);
}

ControlClient::ControlClient(std::string socket_path, std::chrono::milliseconds connect_timeout)
    : socket_path_(std::move(socket_path)), connect_timeout_(connect_timeout) {}

nlohmann::json ControlClient::request(const ControlRequest& request) const {
  return this->request(request, default_reply_timeout(request));
}

nlohmann::json ControlClient::request(const ControlRequest& request,
                                      std::chrono::milliseconds timeout) const {
  return this->request(to_json(request), timeout);
}

nlohmann::json ControlClient::report_job(const JobRequest& report,
                                         std::chrono::milliseconds timeout) const {
  return ControlClient(socket_path_, std::min(connect_timeout_, timeout))
      .request(ControlRequest{report}, timeout);
}

nlohmann::json ControlClient::request(const nlohmann::json& request,
                                      std::chrono::milliseconds timeout) const {
  const std::string where = "corenoised at '" + socket_path_ + "'";
  const sockaddr_un address = socket_address(socket_path_, where);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) throw unreachable(where, std::string("socket: ") + std::strerror(errno));
  connect_socket(fd.get(), address, where, connect_timeout_);

  const Exchange exchange{fd.get(), where, Clock::now() + timeout, timeout};
  send_line(exchange, encode_line(request));
  const std::string reply = read_line(exchange);
  try {
    return parse_reply(reply);
  } catch (const ProtocolError& e) {
    throw std::runtime_error(where + " sent a " + e.what());
  }
}

}  // namespace corenoise

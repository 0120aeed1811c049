#include "daemon/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace corenoise {

SystemdNotifier::SystemdNotifier() {
  const char* socket_path = std::getenv("NOTIFY_SOCKET");
  if (socket_path != nullptr && (socket_path[0] == '/' || socket_path[0] == '@') &&
      std::strlen(socket_path) < sizeof(sockaddr_un::sun_path)) {
    address_ = socket_path;
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  const bool for_us = pid == nullptr || std::atoll(pid) == static_cast<long long>(::getpid());
  if (usec != nullptr && for_us) {
    const long long value = std::atoll(usec);
    if (value > 0) watchdog_period_ = std::chrono::microseconds(value / 2);
  }
}

SystemdNotifier::~SystemdNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

bool SystemdNotifier::notify(std::string_view state) const {
  if (fd_ < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, address_.data(), address_.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
  return ::sendto(fd_, state.data(), state.size(), MSG_NOSIGNAL,
                  reinterpret_cast<const sockaddr*>(&addr),
                  length) == static_cast<ssize_t>(state.size());
}

long long monotonic_microseconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace corenoise

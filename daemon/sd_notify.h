// The systemd notify protocol without libsystemd: datagrams such as
// "READY=1" to the socket named by $NOTIFY_SOCKET (a path, or an abstract
// name starting with '@'). Without $NOTIFY_SOCKET every call is a no-op, so
// the daemon runs the same under systemd, in a terminal and in tests.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace corenoise {

class SystemdNotifier {
 public:
  // Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID once.
  SystemdNotifier();
  ~SystemdNotifier();
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  bool enabled() const { return fd_ >= 0; }
  // Sends `state` (e.g. "READY=1\nSTATUS=probing"); false if not sent.
  bool notify(std::string_view state) const;
  // How often to send WATCHDOG=1 (half of WATCHDOG_USEC), if systemd asked
  // this process for it.
  std::optional<std::chrono::microseconds> watchdog_period() const { return watchdog_period_; }

 private:
  int fd_ = -1;
  std::string address_;
  std::optional<std::chrono::microseconds> watchdog_period_;
};

// CLOCK_MONOTONIC in µs, for "MONOTONIC_USEC=" next to RELOADING=1.
long long monotonic_microseconds();

}  // namespace corenoise

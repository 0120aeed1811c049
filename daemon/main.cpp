// corenoised: the per-node daemon. Start-up errors (bad configuration, a
// taken port, an unusable socket path) exit 1 with a message naming the
// input; once running, nothing a client or a probe does stops it.
#include <unistd.h>

#include <boost/asio.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/log.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace {

constexpr const char* kUsage = R"(Usage: corenoised [--config FILE] [--OPTION VALUE]...

The corenoise daemon: runs fixed-work probes pinned to every core of this
node at intervals, exports per-core slowdown metrics for Prometheus on
--listen (/metrics), and takes orders from `corenoise` over the control
socket. Run it as a systemd service (Type=notify; SIGHUP reloads).

Options are read from the config file first (NAME = VALUE per line, '#'
comments; default /etc/corenoise/corenoised.conf, ignored if missing unless
--config names it) and then from the command line, which wins.

  --config FILE             the config file (default: /etc/corenoise/corenoised.conf)
  --check-config            validate the configuration and exit
  --help, --version

Options (config-file names are the same without the dashes):
)";

void print_usage() {
  std::cout << kUsage;
  for (const auto& spec : corenoise::daemon_option_specs()) {
    std::cout << corenoise::format_option_help(spec.name, spec.value_name, spec.help);
  }
  std::cout << "\nExit status: 0 stopped cleanly, 1 could not start (the message says why).\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_usage();
      return 0;
    }
    if (arg == "--version") {
      std::cout << "corenoised " CORENOISE_VERSION "\n";
      return 0;
    }
    if (arg == "--check-config") {
      check_only = true;
      continue;
    }
    args.push_back(arg);
  }
  try {
    corenoise::DaemonConfig config = corenoise::load_config(args);
    if (check_only) {
      std::cout << "configuration OK (" << config.config_path
                << (config.config_path_given ? "" : ", if present") << ")\n";
      return 0;
    }
    boost::asio::io_context io(1);
    corenoise::Daemon daemon(io, std::move(config), args);
    daemon.start();
    io.run();
    // Stopped by a signal: the daemon has cleaned up what matters (see
    // Daemon::shut_down); skip the teardown of the rest.
    corenoise::log_info("stopped");
    std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
    // _exit() skips LeakSanitizer's exit-time check, so check here instead,
    // while `daemon` is still alive: what it holds is reachable, and what
    // is reported was lost during the run.
    __lsan_do_leak_check();
#endif
    _exit(0);
  } catch (const std::exception& e) {
    corenoise::log_error(std::string("corenoised: ") + e.what());
    return 1;
  }
}

// Does being scraped disturb what corenoised measures? The same daemon,
// rounds back to back, in alternating blocks without and with 50 scrapes/s
// of /metrics from another thread; the medians of the matmul figure
// (corenoise_probe_duration_seconds{probe="matmul"}) per CPU are compared.
// Goal: within 1 %. A benchmark: it prints figures, it does not judge.
//
//   build/tests/bench/scrape_load_bench [ROUNDS_PER_BLOCK] [BLOCKS]
#include <atomic>
#include <cstdio>
#include <map>
#include <thread>

#include "../integration/daemon_process.h"
#include "probe/stats.h"
#include "probe/topology.h"

using namespace corenoise;
using namespace corenoise::testing;

int main(int argc, char** argv) {
  const int per_block = argc > 1 ? std::atoi(argv[1]) : 10;
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 4;
  const unsigned cpus = static_cast<unsigned>(Topology::load("native").pus().size());
  TempDir dir;
  DaemonProcess daemon({"--config", "/dev/null", "--listen", "127.0.0.1:0", "--socket",
                        dir.path() + "/ctl.sock", "--state-dir", dir.path(), "--interval", "0.2",
                        "--interval-spread", "0", "--busy-policy", "probe", "--probes",
                        "matmul,clock"});
  const int port = daemon.port();
  if (port <= 0) {
    std::fprintf(stderr, "daemon did not start:\n%s", daemon.log().c_str());
    return 1;
  }
  std::map<bool, std::map<unsigned, std::vector<double>>> figures;  // loaded -> cpu -> values
  std::atomic<bool> load{false}, done{false};
  std::atomic<long> scrapes{0};
  std::thread scraper([&] {
    while (!done) {
      if (load) {
        http_get(port, "/metrics");
        ++scrapes;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // 50/s
    }
  });
  double last_round = 0;
  for (int block = 0; block < blocks; ++block) {
    const bool loaded = block % 2 == 1;
    load = loaded;
    for (int r = 0; r < per_block;) {
      const std::string text = http_get(port, "/metrics").second;
      const double round =
          metric_value(text, "corenoise_rounds_total{mode=\"isolated\"}").value_or(0);
      if (round <= last_round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      last_round = round;
      ++r;
      for (unsigned cpu = 0; cpu < cpus; ++cpu) {
        const auto v =
            metric_value(text, "corenoise_probe_duration_seconds{cpu=\"" + std::to_string(cpu) +
                                   "\",probe=\"matmul\",mode=\"isolated\"}");
        if (v) figures[loaded][cpu].push_back(*v);
      }
    }
  }
  done = true;
  scraper.join();
  std::printf(
      "matmul figure per CPU, %d blocks of %d rounds, alternating without/with 50 "
      "scrapes/s (%ld scrapes)\n",
      blocks, per_block, scrapes.load());
  std::printf("%4s %16s %16s %8s\n", "cpu", "unloaded_ms", "scraped_ms", "ratio");
  for (unsigned cpu = 0; cpu < cpus; ++cpu) {
    const double a = stats::median(figures[false][cpu]), b = stats::median(figures[true][cpu]);
    std::printf("%4u %16.4f %16.4f %8.4f\n", cpu, a * 1e3, b * 1e3, b / a);
  }
  return 0;
}

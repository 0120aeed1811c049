// What a scrape costs on a big node: a 512-PU snapshot with every figure of
// both modes, baseline and cluster ratios, /sys facts; then
//   - collect_metrics() alone (building the families: the Collect() work),
//   - render_metrics() alone (prometheus-cpp's text serializer),
//   - 2,000 sequential GETs of /metrics over loopback from this process,
//   - 200 more with Accept-Encoding: gzip, as Prometheus sends (served
//     uncompressed: the cached text is sent as it is).
// Prints latency quantiles and the payload size. Goal: p99 <= 5 ms per
// scrape. A benchmark: it never fails on a timing.
//
// Usage: metrics_bench [GETS]   (default 2000)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../unit/served_exporter.h"
#include "daemon/exporter.h"
#include "probe/report.h"
#include "probe/topology.h"

namespace corenoise {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// GET over a fresh connection (the exporter closes after each response), read
// to EOF. Returns the body size, 0 on any failure.
std::size_t get(int port, const char* path, bool gzip = false) {
  const int fd = connect_loopback(port);
  if (fd < 0) return 0;
  const std::string request = std::string("GET ") + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                              (gzip ? "Accept-Encoding: gzip\r\n" : "") + "\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  static thread_local std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n <= 0) break;
    raw.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 200", 0) != 0 || end == std::string::npos) return 0;
  return raw.size() - end - 4;
}

struct Quantiles {
  double p50, p99, max;
};

Quantiles quantiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[static_cast<std::size_t>(q * (v.size() - 1))]; };
  return {at(0.5), at(0.99), v.back()};
}

void print(const char* what, const std::vector<double>& times) {
  const Quantiles q = quantiles(times);
  std::printf("%-28s n=%-5zu p50 %7.3f ms   p99 %7.3f ms   max %7.3f ms\n", what, times.size(),
              q.p50 * 1e3, q.p99 * 1e3, q.max * 1e3);
}

// Every figure of both modes for 512 PUs, from synthetic samples with a
// little spread so that references and verdicts are realistic.
Snapshot big_snapshot() {
  Snapshot s;
  s.version = CORENOISE_VERSION;
  s.started_unix_seconds = 1700000000;
  s.report.pus = Topology::load("synthetic:package:2 numa:1 core:128 pu:2").pus();
  s.report.settings.stream_bytes = 24u << 20;
  std::mt19937 random(42);
  std::uniform_real_distribution<double> jitter(0.97, 1.06);
  for (Mode mode : {Mode::isolated, Mode::concurrent}) {
    RoundSamples round;
    round.mode = mode;
    round.started_unix_seconds = 1700000100;
    round.duration_seconds = 30;
    for (const ProcessingUnit& pu : s.report.pus) {
      CpuSamples c;
      c.cpu = pu.cpu;
      c.work[ProbeKind::matmul].flops = 2.0 * 128 * 128 * 128 * 32;
      c.work[ProbeKind::stream].bytes = 24u << 20;
      for (int i = 0; i < 7; ++i) {
        c.matmul_seconds.push_back(0.0015 * jitter(random));
        c.samples[ProbeKind::clock].push_back(3.0e9 / jitter(random));
        c.samples[ProbeKind::stream].push_back(0.002 * jitter(random));
        DetourResult d;
        d.window_seconds = 0.025;
        d.count = 10;
        d.total_seconds = 0.0002 * jitter(random);
        d.max_seconds = 0.00005;
        c.detours.push_back(d);
      }
      round.cpus.push_back(std::move(c));
    }
    s.report.modes.push_back(make_mode_report(round, s.report.pus, Thresholds{}));
    s.rounds[mode] = {12, round.started_unix_seconds, round.duration_seconds};
  }
  for (const ProcessingUnit& pu : s.report.pus) {
    for (RatioProbe probe : kAllRatioProbes) {
      for (Mode mode : {Mode::isolated, Mode::concurrent}) {
        s.baseline_slowdown[{pu.cpu, probe, mode}] = jitter(random);
        s.cluster_slowdown[{pu.cpu, probe, mode}] = jitter(random);
      }
    }
    s.totals[pu.cpu] = {1200, 0.024};
    s.sys[pu.cpu] = {3, 5, 2.9e9, 3.5e9};
  }
  s.cluster_published_unix_seconds = 1700000200;
  return s;
}

int run(int gets) {
  const auto snapshot = std::make_shared<const Snapshot>(big_snapshot());

  std::size_t series = 0;
  std::vector<double> collect_times, render_times;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = Clock::now();
    const auto families = collect_metrics(*snapshot);
    collect_times.push_back(seconds_since(t0));
    const auto t1 = Clock::now();
    const std::string text = render_metrics(families);
    render_times.push_back(seconds_since(t1));
    series = 0;
    for (const auto& f : families) series += f.metric.size();
  }
  std::printf("snapshot: %zu PUs, %zu modes, %zu series\n", snapshot->report.pus.size(),
              snapshot->report.modes.size(), series);
  print("collect_metrics (Collect)", collect_times);
  print("render_metrics (serialize)", render_times);

  SnapshotStore store;
  store.set(snapshot);
  // On an event loop of its own thread, as the daemon serves it.
  ExporterLoop loop;
  Exporter exporter(loop.io, "127.0.0.1:0", store);
  loop.start();
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(gets));
  std::size_t bytes = 0;
  int failures = 0;
  for (int i = 0; i < gets; ++i) {
    const auto t0 = Clock::now();
    const std::size_t n = get(exporter.port(), "/metrics");
    times.push_back(seconds_since(t0));
    if (n == 0) ++failures;
    bytes = std::max(bytes, n);
  }
  print("GET /metrics (loopback)", times);
  const Quantiles q = quantiles(times);
  std::printf("payload %zu bytes; %d failed requests; goal p99 <= 5 ms: %s\n", bytes, failures,
              q.p99 <= 0.005 ? "met" : "NOT met");

  // Prometheus asks for gzip; the exporter answers with the cached plain text.
  std::vector<double> gzip_times;
  std::size_t gzip_bytes = 0;
  for (int i = 0; i < std::min(gets, 200); ++i) {
    const auto t0 = Clock::now();
    gzip_bytes = std::max(gzip_bytes, get(exporter.port(), "/metrics", true));
    gzip_times.push_back(seconds_since(t0));
  }
  print("GET, Accept-Encoding: gzip", gzip_times);
  std::printf("payload when asked for gzip %zu bytes\n", gzip_bytes);
  loop.stop();  // before the exporter goes: it is the loop's
  return 0;
}

}  // namespace
}  // namespace corenoise

int main(int argc, char** argv) {
  const int gets = argc > 1 ? std::atoi(argv[1]) : 2000;
  try {
    return corenoise::run(gets > 0 ? gets : 2000);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metrics_bench: %s\n", e.what());
    return 1;
  }
}

// The Prometheus exporter: an HTTP server (prometheus-cpp's Exposer, on
// civetweb) that serves the current Snapshot on every scrape of /metrics.
//
// The scrape path does nothing but render: it takes the store's current
// immutable snapshot and builds fresh metric families from it, so a scrape
// never waits for a probe round and a round never waits for a scrape. The
// rendered text is kept until the snapshot changes (once per round), so
// only the first scrape after a round pays for prometheus-cpp's serializer.
// docs/metrics.md is the contract for every name, label and unit built here.
#pragma once

#include <prometheus/metric_family.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/snapshot.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace corenoise {

// The metric families one scrape serves for `snapshot` (the corenoise_*
// ones; prometheus-cpp adds its own exposer_* families on /metrics). Pure:
// no I/O, no clock, safe to call from any thread. Families come in a fixed
// order, series within a family in topology order (then probe, then mode);
// families without a series are left out, and so is any series whose value
// is absent or not finite.
std::vector<prometheus::MetricFamily> collect_metrics(const Snapshot& snapshot);

// The Prometheus text exposition format of `families`, exactly as /metrics
// serves it (prometheus-cpp's TextSerializer).
std::string render_metrics(const std::vector<prometheus::MetricFamily>& families);

// Serves, over plain HTTP (Debian's civetweb build has no working TLS and
// no IPv6):
//   GET|HEAD /         a small HTML page naming the version, linking /metrics
//   GET|HEAD /metrics  the exposition of store.get() at the time of the scrape
// Any other path is 404; any other method on those paths is 405.
//
// Threads: civetweb runs a listener and 2 worker threads from construction
// to destruction; they inherit the CPU affinity of the constructing thread,
// so construct the Exporter on a thread kept off the measured cores.
// The Exporter itself is not thread-safe (construct and destroy it on one
// thread); `store` must outlive it and may be set() from any thread.
class Exporter {
 public:
  // `listen` is "HOST:PORT" with an IPv4 address or host name, e.g.
  // "127.0.0.1:9847" or "0.0.0.0:9847"; port 0 picks a free port (see
  // port()). Throws std::runtime_error naming the address and the reason if
  // it is malformed or cannot be bound (e.g. the port is in use).
  Exporter(const std::string& listen, const SnapshotStore& store);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // The TCP port actually listened on (the chosen one when asked for 0).
  int port() const { return port_; }
  const std::string& listen() const { return listen_; }

  class Collector;  // renders and caches the exposition (exporter.cpp)

 private:
  std::string listen_;
  // Declared before exposer_ so that the server, and with it every scrape
  // in flight, is stopped before the collector goes away.
  std::shared_ptr<Collector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  std::string wake_host_;  // numeric IPv4 address that reaches the listener, for a fast stop
};

}  // namespace corenoise

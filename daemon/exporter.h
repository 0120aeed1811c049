// The Prometheus exporter: the metric model of a Snapshot (prometheus-cpp's
// MetricFamily and its text serializer) and the HTTP server that serves it
// on every scrape of /metrics (Boost.Beast on the daemon's own event loop,
// with TLS and basic authentication from a web config file).
//
// The scrape path does nothing but render: it takes the store's current
// immutable snapshot and builds fresh metric families from it, so a scrape
// never waits for a probe round and a round never waits for a scrape. The
// rendered text is kept until the snapshot changes (once per round), so
// only the first scrape after a round pays for prometheus-cpp's serializer.
// docs/metrics.md is the contract for every name, label and unit built here.
#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/snapshot.h"
#include "daemon/web_config.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace corenoise {

// The metric families one scrape serves for `snapshot`. Pure:
// no I/O, no clock, safe to call from any thread. Families come in a fixed
// order, series within a family in topology order (then probe, then mode);
// families without a series are left out, and so is any series whose value
// is absent or not finite.
std::vector<prometheus::MetricFamily> collect_metrics(const Snapshot& snapshot);

// The families of the counters beside the snapshot (SnapshotStore::live()),
// served after collect_metrics()'s. Pure, as collect_metrics().
std::vector<prometheus::MetricFamily> collect_live_metrics(const LiveCounts& counts);

// The Prometheus text exposition format of `families`, exactly as /metrics
// serves it (prometheus-cpp's TextSerializer).
std::string render_metrics(const std::vector<prometheus::MetricFamily>& families);

// `text` as valid UTF-8: each byte that does not start or continue a
// well-formed sequence (overlong forms, surrogates and code points above
// U+10FFFF included) becomes U+FFFD. Label values that come from outside
// (the names of the threads and commands tracing saw) pass through it,
// since Prometheus rejects a whole scrape with one invalid label value.
std::string valid_utf8(std::string_view text);

// How much of the daemon a few clients may hold.
struct ExporterLimits {
  // Connections served at once. At the cap, a new one closes the oldest
  // that has not yet sent its whole request (it holds a slot for nothing);
  // when every one has, the new one is closed as soon as it is accepted.
  // Prometheus needs one per scrape.
  int max_connections = 32;
  // Connections from one peer at once (an IPv4 address, or an IPv6 /64,
  // which one host usually has whole); one more from it is closed as soon
  // as it is accepted, so one host cannot fill max_connections.
  int max_per_peer = 4;
  // From accept to the whole request, TLS handshake included. A scrape
  // sends its request at once; a client still silent after this is dropped.
  std::chrono::milliseconds request_deadline{3000};
  // From accept to the last byte of the reply, TLS handshake included: a
  // client that stalls anywhere is dropped when it passes.
  std::chrono::milliseconds deadline{10000};
};

// Serves, one request per connection (Connection: close):
//   GET|HEAD /         a small HTML page naming the version, linking /metrics
//   GET|HEAD /metrics  the exposition of store.get() at the time of the scrape
// Any other path is 404; any other method on those paths is 405 with Allow.
// With a web config: TLS (tls_server_config), and every request needs one
// of basic_auth_users, else 401 with WWW-Authenticate.
//
// Threads: everything runs on `io`'s thread (the daemon's event loop),
// except the bcrypt check of a password not seen before, which runs on one
// thread of the Exporter's own and posts its answer back; that thread
// inherits the constructing thread's CPU affinity. Construct, destroy and
// call set_web_config() on `io`'s thread, or while `io` is not running;
// `io` and `store` must outlive the Exporter; store may be set() from any
// thread.
class Exporter {
 public:
  // `listen` is "HOST:PORT": an IPv4 address, an IPv6 one in brackets
  // ("[::1]:9847", "[::]:9847" for both families) or a host name (its IPv4
  // address where it has one); port 0 picks a free port (see port()).
  // Throws std::runtime_error naming the address and the reason if it is
  // malformed or cannot be bound (e.g. the port is in use).
  Exporter(boost::asio::io_context& io, const std::string& listen, const SnapshotStore& store,
           std::shared_ptr<const WebConfig> web = nullptr, ExporterLimits limits = {});
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // The TLS and users for connections accepted from now on (a reload);
  // null for plain HTTP without authentication.
  void set_web_config(std::shared_ptr<const WebConfig> web);

  // For tests only (the daemon never sets it): `hook` is called on `io`'s
  // thread at two points where a real fault can strike, with "accept" (a
  // connection accepted, its session not yet made) and "route" (a request
  // read and authenticated, its reply not yet made). What it throws takes
  // the path a bad_alloc or an OpenSSL failure there would: that connection
  // is closed, the others and the event loop go on. Null: no hook. Call it
  // as set_web_config().
  void set_fault_hook_for_tests(std::function<void(std::string_view point)> hook);

  // The TCP port actually listened on (the chosen one when asked for 0).
  int port() const { return port_; }
  const std::string& listen() const { return listen_; }

  class Collector;  // renders and caches the exposition (exporter_server.cpp)
  struct Server;    // the acceptor and what connections share

 private:
  std::string listen_;
  std::shared_ptr<Server> server_;
  int port_ = 0;
};

}  // namespace corenoise

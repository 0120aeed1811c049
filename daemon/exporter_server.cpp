// The exporter's HTTP server: Boost.Beast over Asio sockets, or Asio's
// OpenSSL streams with a web config's TLS, on the daemon's event loop.
//
// Why not prometheus-cpp's Exposer: Debian's civetweb completes a TLS
// handshake and then answers nothing, has no IPv6, and its two worker
// threads with a 10 s request timeout let two slow clients hold every
// scrape off. Here a connection costs a socket and a few KiB, not a
// thread; each has an absolute deadline (a short one until its request is
// in) and their number is capped, in all and per peer, so slow, stalled or
// idle clients are dropped and counted against the caps, never against
// Prometheus's scrape: one host cannot fill the cap, and at the cap a new
// connection takes the place of the oldest one still without a request. Serving is cheap enough for
// the loop: the exposition is rendered once per snapshot (a round) and sent from the cache; only a
// password not seen before costs real time (bcrypt), and that runs on a thread of its own.
#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "daemon/exporter.h"
#include "daemon/log.h"

namespace corenoise {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

const std::string& landing_page() {
  static const std::string page =
      "<!DOCTYPE html>\n"
      "<html lang=\"en\">\n"
      "<head><meta charset=\"utf-8\"><title>corenoised</title></head>\n"
      "<body>\n"
      "<h1>corenoised " CORENOISE_VERSION
      "</h1>\n"
      "<p>Per-core slowdown, clock, noise and memory bandwidth of this node.</p>\n"
      // Relative, so the link still works behind a proxy that adds a prefix.
      "<p><a href=\"metrics\">Metrics</a></p>\n"
      "</body>\n"
      "</html>\n";
  return page;
}

// "HOST:PORT" as an endpoint to bind, or a runtime_error naming it.
tcp::endpoint listen_endpoint(asio::io_context& io, const std::string& listen) {
  const auto fail = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error("cannot listen on " + listen + ": " + why);
  };
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    throw fail("expected HOST:PORT, e.g. 127.0.0.1:9847 or [::1]:9847");
  }
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) > 65535) {
    throw fail("expected a port number from 0 to 65535");
  }
  if (host.find_first_of(", \t") != std::string::npos) throw fail("expected one HOST:PORT");
  boost::system::error_code ec;
  if (host.front() == '[') {
    if (host.back() != ']') throw fail("expected [IPv6-ADDRESS]:PORT");
    host = host.substr(1, host.size() - 2);
    const auto address = asio::ip::make_address_v6(host, ec);
    if (ec) throw fail("'" + host + "' is not an IPv6 address");
    return {address, static_cast<unsigned short>(std::stoul(port))};
  }
  if (host.find(':') != std::string::npos) {
    throw fail("an IPv6 address goes in brackets, e.g. [::1]:9847");
  }
  if (host.find_first_not_of("0123456789.") == std::string::npos) {
    const auto address = asio::ip::make_address_v4(host, ec);
    if (ec) throw fail("'" + host + "' is not an IPv4 address");
    return {address, static_cast<unsigned short>(std::stoul(port))};
  }
  tcp::resolver resolver(io);
  const auto found = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    throw fail("cannot resolve '" + host + "': " + (ec ? ec.message() : "no address"));
  }
  // Its IPv4 address where it has one, as civetweb did before.
  for (const auto& entry : found) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint();
  }
  return found.begin()->endpoint();
}

// Who a connection counts against for ExporterLimits::max_per_peer: its
// IPv4 address (an IPv4-mapped IPv6 one as IPv4), or its IPv6 /64.
asio::ip::address peer_key(const asio::ip::address& address) {
  if (address.is_v4()) return address;
  const auto v6 = address.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6);
  auto bytes = v6.to_bytes();
  for (std::size_t i = 8; i < bytes.size(); ++i) bytes[i] = 0;
  return asio::ip::address_v6(bytes);
}

// What an exception caught by `catch (...)` says, for the log.
std::string what(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

class Session;

}  // namespace

class Exporter::Collector {
 public:
  explicit Collector(const SnapshotStore& store) : store_(store) {}

  // The exposition text of the current snapshot and the live counters
  // beside it. The snapshot's part is rendered with prometheus-cpp's
  // serializer once per snapshot: a snapshot is immutable and changes once
  // per round, while Prometheus may scrape every second. Rendering 512 PUs
  // takes ~25 ms (the serializer); serving the cached text takes ~1 ms. The
  // live counters' few series are rendered again only when they moved.
  // Thread-safe; concurrent first scrapes wait for one render.
  std::shared_ptr<const std::string> exposition() const {
    const SnapshotPtr snapshot = store_.get();
    const LiveCounts live = store_.live().read();
    std::lock_guard lock(cache_mutex_);
    if (cached_snapshot_ != snapshot || !cached_text_) {
      snapshot_text_ = render_metrics(collect_metrics(*snapshot));
      cached_snapshot_ = snapshot;  // held, so its address cannot be reused
      cached_text_.reset();
    }
    if (!cached_text_ || cached_live_ != live) {
      cached_text_ = std::make_shared<const std::string>(
          snapshot_text_ + render_metrics(collect_live_metrics(live)));
      cached_live_ = live;
    }
    return cached_text_;
  }

 private:
  const SnapshotStore& store_;
  mutable std::mutex cache_mutex_;
  mutable SnapshotPtr cached_snapshot_;
  mutable std::string snapshot_text_;  // cached_snapshot_'s families
  mutable LiveCounts cached_live_;
  mutable std::shared_ptr<const std::string> cached_text_;
};

// What the acceptor and every connection share. Touched on the loop thread
// only, except `bcrypt`'s own thread, which sees nothing of it.
struct Exporter::Server : std::enable_shared_from_this<Exporter::Server> {
  Server(asio::io_context& io_context, const SnapshotStore& store, ExporterLimits l)
      : io(io_context), acceptor(io_context), retry(io_context), collector(store), limits(l) {}

  void accept();
  void on_accept(const boost::system::error_code& ec, tcp::socket socket);
  void admit(tcp::socket socket);
  void retry_later() noexcept;

  asio::io_context& io;
  tcp::acceptor acceptor;
  asio::steady_timer retry;  // after an accept error (EMFILE), so as not to spin
  Collector collector;
  ExporterLimits limits;
  std::shared_ptr<const WebConfig> web;
  // Checks passwords not seen before; null once the Exporter stops.
  std::unique_ptr<asio::thread_pool> bcrypt;
  std::set<Session*> live;                           // open connections, closed at once on stop
  std::map<asio::ip::address, int> per_peer;         // open connections by peer_key()
  std::uint64_t accepted = 0;                        // connections so far, to order them
  std::function<void(std::string_view)> fault_hook;  // set_fault_hook_for_tests()
  // The bcrypt check in flight per peer, with the sessions that sent the
  // same (user, password) meanwhile and wait for its answer.
  struct Check {
    std::string key;  // BasicAuth::pair_key() of the pair checked
    std::vector<std::shared_ptr<Session>> waiting;
  };
  std::map<asio::ip::address, Check> checking;
  bool stopped = false;
};

namespace {

// One connection, one request. Holds the Server, so that the handlers still
// queued on the loop when the Exporter goes find what they touch.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<Exporter::Server> server, tcp::socket socket, asio::ip::address peer)
      : server_(std::move(server)),
        web_(server_->web),
        peer_(peer),
        serial_(server_->accepted++),
        accepted_at_(std::chrono::steady_clock::now()),
        deadline_(server_->io) {
    if (web_ && web_->tls) {
      tls_.emplace(std::move(socket), *web_->tls);
    } else {
      plain_.emplace(std::move(socket));
    }
    ++server_->per_peer[peer_];
    try {
      server_->live.insert(this);
    } catch (...) {
      --server_->per_peer[peer_];
      throw;
    }
  }
  ~Session() { close(); }

  void start() {
    // Until the request is in: the short deadline, then the whole one.
    arm_deadline(std::min(server_->limits.request_deadline, server_->limits.deadline));
    if (tls_) {
      tls_->async_handshake(asio::ssl::stream_base::server,
                            [self = shared_from_this()](const boost::system::error_code& ec) {
                              self->guard([&] {
                                if (ec) {
                                  log_debug("http: TLS handshake failed: " + ec.message());
                                  self->close();
                                  return;
                                }
                                self->read();
                              });
                            });
    } else {
      read();
    }
  }

  // Closes the socket and frees its place under the caps at once (the
  // handlers still queued end as they run).
  void close() {
    if (closed_) return;
    closed_ = true;
    closed_atomic_ = true;
    server_->live.erase(this);
    const auto it = server_->per_peer.find(peer_);
    if (it != server_->per_peer.end() && --it->second <= 0) server_->per_peer.erase(it);
    deadline_.cancel();
    boost::system::error_code ignored;
    lowest().close(ignored);
  }

  // Still waiting for (the rest of) its request: what the cap closes first.
  bool silent() const { return !request_in_ && !closed_; }
  std::uint64_t serial() const { return serial_; }

  // Runs a completion handler's body. Whatever it throws (bad_alloc in a
  // reply or a log line, an OpenSSL failure) closes this session only and
  // goes no further: escaping, it would end io_context::run and the daemon.
  template <typename F>
  void guard(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      try {
        log_debug("http: a connection failed and is closed: " + what(std::current_exception()));
      } catch (...) {
      }
      close();
    }
  }

 private:
  using Body = http::span_body<const char>;

  // `op` on whichever stream this connection has.
  template <typename Op>
  void with_stream(Op op) {
    if (tls_) {
      op(*tls_);
    } else {
      op(*plain_);
    }
  }
  tcp::socket& lowest() { return tls_ ? tls_->next_layer() : *plain_; }

  // Closes the connection `after` its accept unless it is done by then.
  // Re-arming cancels the wait before; a wait that expired just before it
  // was re-armed finds the new expiry still ahead and does nothing.
  void arm_deadline(std::chrono::steady_clock::duration after) {
    deadline_.expires_at(accepted_at_ + after);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      // Stalled somewhere: handshake, request or reply.
      self->guard([&] {
        if (!ec && self->deadline_.expiry() <= std::chrono::steady_clock::now()) self->close();
      });
    });
  }

  void read() {
    parser_.emplace();
    // A scrape is a request line and a few headers; no request has a body.
    parser_->header_limit(16 * 1024);
    parser_->body_limit(4 * 1024);
    with_stream([this](auto& stream) {
      http::async_read(
          stream, buffer_, *parser_,
          [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
            self->guard([&] { self->on_request(ec); });
          });
    });
  }

  void on_request(const boost::system::error_code& ec) {
    if (ec) {
      // A malformed request gets a 400; a client gone or timed out, nothing.
      if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
          ec != http::error::end_of_stream && ec != http::error::partial_message) {
        respond(http::status::bad_request, "text/plain; charset=utf-8", "400 Bad Request\n");
      } else {
        close();
      }
      return;
    }
    request_in_ = true;
    arm_deadline(server_->limits.deadline);
    const auto& request = parser_->get();
    version_ = request.version();
    head_ = request.method() == http::verb::head;
    if (web_ && web_->auth) {
      std::string user, password;
      const auto header = request[http::field::authorization];
      if (!parse_basic_authorization(std::string_view(header.data(), header.size()), user,
                                     password)) {
        unauthorized();
        return;
      }
      const std::optional<bool> known = web_->auth->remembered(user, password);
      if (known == false) {
        unauthorized();  // failed lately: no bcrypt again
        return;
      }
      if (!known) {
        // One check in flight per peer, so that one host's flood queues at
        // most one check ahead of another host's. A request with the pair
        // being checked waits for that answer (Prometheus and another client
        // behind one address, or a scrape retried); one with another pair
        // is told to come back.
        std::string key = web_->auth->pair_key(user, password);
        const auto [check, fresh] = server_->checking.try_emplace(peer_);
        if (fresh) {
          check->second.key = std::move(key);
          check_password(std::move(user), std::move(password));
        } else if (check->second.key == key) {
          check->second.waiting.push_back(shared_from_this());
        } else {
          respond(http::status::too_many_requests, "text/plain; charset=utf-8",
                  "429 Too Many Requests: a password from this address is being checked\n",
                  {{http::field::retry_after, "1"}});
        }
        return;
      }
    }
    route();
  }

  // bcrypt on its own thread; the answer comes back to the loop. At most
  // one check per peer is queued there (`checking`, freed when the answer
  // is back); the loop and remembered users go on meanwhile.
  void check_password(std::string user, std::string password) {
    if (!server_->bcrypt) {
      abandon_check();
      close();
      return;
    }
    try {
      post_check(std::move(user), std::move(password));
    } catch (...) {
      abandon_check();
      throw;
    }
  }

  // No answer will come for this peer's check: those that wait for it are
  // closed now rather than at their deadlines, and the entry goes.
  void abandon_check() {
    const auto check = server_->checking.find(peer_);
    if (check == server_->checking.end()) return;
    const std::vector<std::shared_ptr<Session>> waiting = std::move(check->second.waiting);
    server_->checking.erase(check);
    for (const auto& session : waiting) session->close();
  }

  void post_check(std::string user, std::string password) {
    asio::post(*server_->bcrypt,
               [self = shared_from_this(), auth = web_->auth, user = std::move(user),
                password = std::move(password)]() mutable {
                 // nullopt: not checked, the client having gone meanwhile.
                 std::optional<bool> ok;
                 try {
                   if (!self->closed_quickly()) ok = auth->verify(user, password);
                 } catch (...) {
                   ok = false;  // out of memory: the password is taken as wrong
                 }
                 asio::io_context& io = self->server_->io;
                 // Out of memory here leaves the session to its deadline (and its
                 // peer 429s): better than ending the daemon.
                 try {
                   asio::post(io, [self = std::move(self), ok, user = std::move(user),
                                   password = std::move(password)]() mutable {
                     self->on_checked(ok, std::move(user), std::move(password));
                   });
                 } catch (...) {
                 }
               });
  }

  // On the loop: the answer for this session and for those that wait for
  // it. Unchecked because this client went, the check passes to the first
  // that still waits.
  void on_checked(std::optional<bool> ok, std::string user, std::string password) {
    const auto check = server_->checking.find(peer_);
    std::vector<std::shared_ptr<Session>> waiting;
    if (check != server_->checking.end()) waiting.swap(check->second.waiting);
    if (!ok) {
      std::erase_if(waiting, [](const auto& session) { return session->closed_; });
      if (!waiting.empty()) {
        const std::shared_ptr<Session> next = waiting.front();
        check->second.waiting.assign(waiting.begin() + 1, waiting.end());
        next->guard([&] { next->check_password(std::move(user), std::move(password)); });
        return;
      }
    }
    if (check != server_->checking.end()) server_->checking.erase(check);
    resume_checked(ok.value_or(false));
    for (const auto& session : waiting) session->resume_checked(ok.value_or(false));
  }

  void resume_checked(bool ok) {
    guard([&] {
      if (closed_) return;
      if (ok) {
        route();
      } else {
        unauthorized();
      }
    });
  }

  // Read on the bcrypt thread: a stale false only costs one useless check.
  bool closed_quickly() const { return closed_atomic_.load(std::memory_order_relaxed); }

  void unauthorized() {
    respond(http::status::unauthorized, "text/plain; charset=utf-8", "401 Unauthorized\n",
            {{http::field::www_authenticate, "Basic realm=\"corenoised\""}});
  }

  void route() {
    if (server_->fault_hook) server_->fault_hook("route");
    const auto& request = parser_->get();
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    if (target != "/" && target != "/metrics") {
      respond(http::status::not_found, "text/plain; charset=utf-8",
              "404 Not Found: try /metrics\n");
      return;
    }
    if (request.method() != http::verb::get && !head_) {
      head_ = false;
      respond(http::status::method_not_allowed, "text/plain; charset=utf-8",
              "405 Method Not Allowed: GET or HEAD only\n", {{http::field::allow, "GET, HEAD"}});
      return;
    }
    if (target == "/") {
      respond(http::status::ok, "text/html; charset=utf-8", landing_page());
      return;
    }
    try {
      body_ = server_->collector.exposition();
    } catch (const std::exception& e) {
      // Only bad_alloc is possible; the daemon goes on.
      log_error(std::string("metrics: cannot render the snapshot: ") + e.what());
      respond(http::status::internal_server_error, "text/plain; charset=utf-8",
              "500: cannot render the metrics (see the daemon's log)\n");
      return;
    }
    respond(http::status::ok, "text/plain; version=0.0.4; charset=utf-8", *body_);
  }

  // Sends a whole response and closes; HEAD gets the headers only. `body`
  // must live as long as the session (a static, or body_).
  void respond(http::status status, const char* content_type, std::string_view body,
               std::initializer_list<std::pair<http::field, const char*>> extra = {}) {
    response_.emplace();
    response_->version(version_ == 10 ? 10 : 11);
    response_->result(status);
    response_->set(http::field::content_type, content_type);
    for (const auto& [field, value] : extra) response_->set(field, value);
    response_->keep_alive(false);
    response_->content_length(body.size());
    if (!head_) response_->body() = Body::value_type(body.data(), body.size());
    with_stream([this](auto& stream) {
      http::async_write(
          stream, *response_,
          [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
            self->guard([&] { self->finish(ec); });
          });
    });
  }

  void finish(const boost::system::error_code& ec) {
    if (ec || closed_) {
      close();
      return;
    }
    if (tls_) {
      // close_notify, so that the client knows the reply is whole; the
      // deadline still bounds a peer that never answers it.
      tls_->async_shutdown([self = shared_from_this()](const boost::system::error_code&) {
        self->guard([&] { self->close(); });
      });
      return;
    }
    boost::system::error_code ignored;
    lowest().shutdown(tcp::socket::shutdown_send, ignored);
    close();
  }

  std::shared_ptr<Exporter::Server> server_;
  std::shared_ptr<const WebConfig> web_;  // as at accept: a reload applies to new connections
  asio::ip::address peer_;                // peer_key() of the client
  std::uint64_t serial_;                  // order of accept
  std::chrono::steady_clock::time_point accepted_at_;
  std::optional<tcp::socket> plain_;                   // without TLS
  std::optional<asio::ssl::stream<tcp::socket>> tls_;  // with
  asio::steady_timer deadline_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<Body>> response_;
  std::shared_ptr<const std::string> body_;  // the cached exposition being sent
  unsigned version_ = 11;
  bool head_ = false;
  bool request_in_ = false;  // the whole request read
  bool closed_ = false;
  std::atomic<bool> closed_atomic_{false};
};

}  // namespace

void Exporter::Server::accept() {
  acceptor.async_accept(
      [self = shared_from_this()](const boost::system::error_code& ec, tcp::socket socket) {
        self->on_accept(ec, std::move(socket));
      });
}

// Whatever admitting a connection throws (bad_alloc, SSL_new failing in
// the ssl::stream of a new session) closes that connection only, and the
// acceptor is always armed again: escaping, it would end io_context::run
// and the daemon.
void Exporter::Server::on_accept(const boost::system::error_code& ec, tcp::socket socket) {
  if (stopped) return;
  if (ec) {
    if (ec == asio::error::operation_aborted) return;
    // Out of descriptors or memory: try again shortly rather than spin.
    try {
      log_warning("http: cannot accept a connection: " + ec.message());
    } catch (...) {
    }
    retry_later();
    return;
  }
  try {
    if (fault_hook) fault_hook("accept");
    admit(std::move(socket));
  } catch (...) {
    try {
      log_warning("http: cannot serve a new connection: " + what(std::current_exception()));
    } catch (...) {
    }
  }
  try {
    accept();
  } catch (...) {
    retry_later();
  }
}

// accept() again in 100 ms; if even that cannot be set up (out of memory),
// the exporter stops accepting and says so rather than end the daemon.
void Exporter::Server::retry_later() noexcept {
  try {
    retry.expires_after(std::chrono::milliseconds(100));
    retry.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
      try {
        if (!e && !self->stopped) self->accept();
      } catch (...) {
        self->retry_later();
      }
    });
  } catch (...) {
    try {
      log_error("http: cannot accept connections any more: out of memory");
    } catch (...) {
    }
  }
}

// A new connection under the caps: refused if its peer has max_per_peer
// open; at max_connections, served in place of the oldest connection that
// has not sent its whole request, or refused when there is none.
void Exporter::Server::admit(tcp::socket socket) {
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return;  // gone already
  const asio::ip::address peer = peer_key(remote.address());
  const auto from_peer = per_peer.find(peer);
  if (from_peer != per_peer.end() && from_peer->second >= limits.max_per_peer) {
    log_debug("http: refused a connection from " + remote.address().to_string() + ": " +
              std::to_string(from_peer->second) + " are open from there, the most there may be");
    return;  // the socket closes as it goes
  }
  if (static_cast<int>(live.size()) >= limits.max_connections) {
    Session* oldest = nullptr;
    for (Session* session : live) {
      if (session->silent() && (!oldest || session->serial() < oldest->serial())) oldest = session;
    }
    if (!oldest) {
      log_debug("http: refused a connection: " + std::to_string(live.size()) +
                " are open and being served, the most there may be");
      return;
    }
    log_debug("http: closed the oldest connection still without a request, for a new one");
    oldest->close();
  }
  socket.set_option(tcp::no_delay(true), ec);  // a reply's last segment goes at once
  std::make_shared<Session>(shared_from_this(), std::move(socket), peer)->start();
}

Exporter::Exporter(asio::io_context& io, const std::string& listen, const SnapshotStore& store,
                   std::shared_ptr<const WebConfig> web, ExporterLimits limits)
    : listen_(listen), server_(std::make_shared<Server>(io, store, limits)) {
  const tcp::endpoint endpoint = listen_endpoint(io, listen);
  const auto fail = [&](const char* what, const boost::system::error_code& ec) {
    return std::runtime_error("cannot listen on " + listen + ": " + what + ec.message());
  };
  boost::system::error_code ec;
  tcp::acceptor& acceptor = server_->acceptor;
  if (acceptor.open(endpoint.protocol(), ec)) throw fail("cannot open a socket: ", ec);
  // A restart must not wait out the TIME_WAIT of the last scrapes; a port
  // another process listens on is still refused.
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  // [::] takes IPv4 too, whatever net.ipv6.bindv6only says.
  if (endpoint.address().is_v6()) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (acceptor.bind(endpoint, ec)) throw fail("", ec);
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) throw fail("", ec);
  port_ = acceptor.local_endpoint().port();
  server_->web = std::move(web);
  server_->bcrypt = std::make_unique<asio::thread_pool>(1);
  server_->accept();
}

// Closing the acceptor and every connection stops at once: nothing waits
// for a poll quantum or a slow client. A bcrypt check under way (at most
// ~0.25 s) is waited for; those queued behind it are dropped.
Exporter::~Exporter() {
  server_->stopped = true;
  boost::system::error_code ignored;
  server_->acceptor.close(ignored);
  server_->retry.cancel();
  for (Session* session : std::set<Session*>(server_->live)) session->close();
  server_->bcrypt->stop();
  server_->bcrypt->join();
  server_->bcrypt.reset();
  // The sessions that waited for a dropped check: each holds the Server,
  // which holds them here.
  server_->checking.clear();
}

void Exporter::set_web_config(std::shared_ptr<const WebConfig> web) {
  server_->web = std::move(web);
}

void Exporter::set_fault_hook_for_tests(std::function<void(std::string_view point)> hook) {
  server_->fault_hook = std::move(hook);
}

}  // namespace corenoise

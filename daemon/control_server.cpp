#include "daemon/control_server.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "daemon/control/control_protocol.h"
#include "daemon/peer_process.h"

namespace corenoise {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using Socket = asio::local::stream_protocol::socket;
using boost::system::error_code;

std::string errno_text(int error) { return std::system_category().message(error); }

void set_cloexec(int fd) {
  // Asio opens sockets without close-on-exec; a daemon's control socket
  // must not leak into anything it might spawn.
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

gid_t resolve_group(const std::string& name) {
  std::vector<char> buffer(1024);
  for (;;) {
    group entry{};
    group* found = nullptr;
    const int rc = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (rc != 0) {
      throw std::runtime_error("control socket: cannot look up group '" + name +
                               "': " + errno_text(rc));
    }
    if (found == nullptr) {
      throw std::runtime_error("control socket: group '" + name +
                               "' does not exist (create it, or change the configured group)");
    }
    return entry.gr_gid;
  }
}

// True if `uid`'s user is a member of `wanted`, by the group database (the
// peer's own supplementary groups are not visible through SO_PEERCRED).
bool user_in_group(uid_t uid, gid_t primary, gid_t wanted) {
  std::vector<char> buffer(1024);
  passwd entry{};
  passwd* found = nullptr;
  for (;;) {
    const int rc = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (rc != 0 || found == nullptr) return false;  // no user name: no supplementary groups
    break;
  }
  std::vector<gid_t> groups(32);
  for (int attempt = 0; attempt < 8; ++attempt) {
    int count = static_cast<int>(groups.size());
    if (::getgrouplist(entry.pw_name, primary, groups.data(), &count) >= 0) {
      groups.resize(static_cast<std::size_t>(count));
      return std::find(groups.begin(), groups.end(), wanted) != groups.end();
    }
    groups.resize(static_cast<std::size_t>(std::max(count, 1)) * 2);
  }
  return false;
}

// A socket file nobody listens on is left over from a daemon that died;
// one somebody listens on belongs to a live daemon and must not be stolen.
bool someone_listens(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int error = errno;
  ::close(fd);
  return rc == 0 || error == EAGAIN || error == EINPROGRESS;  // EAGAIN: listening, backlog full
}

void refuse(Socket& socket, const std::string& message) {
  // Non-blocking, best effort: a refused client gets one line if its buffer
  // takes it, and never holds anything of ours.
  error_code ignored;
  socket.non_blocking(true, ignored);
  const std::string line = encode_line(error_reply(message));
  socket.write_some(asio::buffer(line), ignored);
  // What the client sent already is read and dropped: a Unix socket closed
  // with unread data resets its peer (ECONNRESET), whose read would then
  // lose the refusal above.
  std::array<char, 4096> sink{};
  for (int i = 0; i < 256 && socket.read_some(asio::buffer(sink), ignored) > 0; ++i) {
  }
  socket.shutdown(Socket::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace

class ControlConnection;

struct ControlServer::State {
  State(asio::io_context& io_context, ControlHandler& control_handler, ControlServerOptions opts)
      : io(io_context),
        handler(control_handler),
        options(std::move(opts)),
        acceptor(io_context),
        retry_timer(io_context) {}

  asio::io_context& io;
  ControlHandler& handler;
  ControlServerOptions options;
  std::optional<gid_t> group_gid;
  asio::local::stream_protocol::acceptor acceptor;
  asio::steady_timer retry_timer;  // after an accept error (e.g. out of file descriptors)
  std::set<std::shared_ptr<ControlConnection>> connections;
  std::atomic<std::size_t> connection_count{0};
  // Open connections of each uid that is neither root nor in the group.
  std::map<uid_t, std::size_t> user_connections;
  // getgrouplist's answers (an NSS lookup, perhaps over the network) per
  // uid, for a minute: a user opening connections in a loop must not make
  // the event loop wait on LDAP for each.
  struct GroupAnswer {
    bool member = false;
    std::chrono::steady_clock::time_point asked;
  };
  std::map<uid_t, GroupAnswer> group_answers;
  struct ReadBudget {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled;
  };
  std::map<uid_t, ReadBudget> read_budgets;  // of users, when reads_per_second is set
  bool started = false;
  bool stopped = false;
  // The socket file this server created, so stop() never unlinks a file a
  // later daemon put in its place.
  dev_t socket_dev = 0;
  ino_t socket_ino = 0;
  bool socket_created = false;
};

namespace {

// One connection of a user (not root, not the group) fewer.
void forget_user_connection(ControlServer::State& state, uid_t uid) {
  if (auto it = state.user_connections.find(uid);
      it != state.user_connections.end() && --it->second == 0) {
    state.user_connections.erase(it);
  }
}

// Whether `uid` may have one more status or results now (a token bucket of
// reads_per_second, bursts of twice that): each renders a document on the
// event loop that also serves root, the scrapes and the rounds.
bool may_read(ControlServer::State& state, uid_t uid);

}  // namespace

// One client. Owned by State::connections while open; completion handlers
// hold a shared_ptr so a closed connection lives until its last one runs.
// Requests on one connection are handled one at a time, replies in order:
// while a run/calibrate is in flight the connection keeps reading (to see the
// client go away) but does not parse further lines.
class ControlConnection : public std::enable_shared_from_this<ControlConnection> {
 public:
  struct Peer {
    std::optional<PeerCredentials> credentials;  // nullopt: SO_PEERCRED failed; owns its pidfd
    bool privileged = false;                     // root or the control group
    // Whom its connections count against: its uid, or (uid_t)-1 without
    // credentials.
    uid_t uid() const { return credentials ? credentials->uid : static_cast<uid_t>(-1); }
  };

  ControlConnection(std::shared_ptr<ControlServer::State> state, Socket socket, Peer peer)
      : state_(std::move(state)), socket_(std::move(socket)), timer_(state_->io), peer_(peer) {}

  void start() {
    touch();
    read();
  }

  // Idempotent; safe from any completion handler.
  void close() {
    if (closed_) return;
    closed_ = true;
    auto self = shared_from_this();  // erase() below may drop the last owner
    error_code ignored;
    timer_.cancel(ignored);
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
    if (peer_.credentials && peer_.credentials->pidfd >= 0) ::close(peer_.credentials->pidfd);
    if (!peer_.privileged) forget_user_connection(*state_, peer_.uid());
    state_->connections.erase(self);
    state_->connection_count.fetch_sub(1);
  }

 private:
  void read() {
    if (closed_ || reading_ || eof_ || close_after_write_) return;
    // Backpressure: while a request is in flight, buffer at most one line's
    // worth of pipelined input, then stop reading until it is done; while
    // the client leaves its replies unread, read no more requests.
    if (busy_ && pending_.size() > state_->options.max_line_bytes) return;
    if (output_full()) return;
    reading_ = true;
    socket_.async_read_some(asio::buffer(chunk_),
                            [self = shared_from_this()](error_code ec, std::size_t n) {
                              self->guard([&] { self->on_read(ec, n); });
                            });
  }

  void on_read(error_code ec, std::size_t n) {
    reading_ = false;
    if (closed_) return;
    if (ec) {
      if (ec != asio::error::eof) return close();
      on_eof();
      return;
    }
    pending_.append(chunk_.data(), n);
    process();
    // A line begun and not finished: it has line_deadline from its first
    // byte, however slowly the rest trickles in.
    if (pending_.empty()) {
      line_started_.reset();
    } else if (!line_started_) {
      line_started_ = asio::steady_timer::clock_type::now();
    }
    touch();
    read();
  }

  // A client may half-close (shutdown(SHUT_WR), as `nc -N` or socat do after
  // their input) and still wait for its replies; one that closed entirely
  // (POLLHUP) cannot read them, so its work is dropped at once.
  void on_eof() {
    eof_ = true;
    pollfd p{socket_.native_handle(), POLLOUT, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) return close();
    if (!pending_.empty() && pending_.back() != '\n') pending_ += '\n';  // a last unterminated line
    process();
    finish_if_done();
  }

  // Replies queued beyond the limit: a client that sends without reading.
  bool output_full() const { return out_bytes_ > state_->options.max_unread_reply_bytes; }

  // Handles the complete lines in pending_, one request at a time.
  void process() {
    const std::size_t limit = state_->options.max_line_bytes;
    while (!busy_ && !closed_ && !close_after_write_ && !output_full()) {
      const std::size_t end = pending_.find('\n');
      if (end == std::string::npos) {
        if (pending_.size() > limit) refuse_long_line();
        return;
      }
      if (end > limit) return refuse_long_line();
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      line_started_.reset();  // what is left, if anything, starts its own clock when read
      handle(line);
    }
  }

  void refuse_long_line() {
    send(error_reply("request line longer than " + std::to_string(state_->options.max_line_bytes) +
                     " bytes; closing the connection"));
    pending_.clear();
    close_after_write_ = true;
    finish_if_done();
  }

  void handle(const std::string& line) {
    ControlRequest request;
    try {
      request = parse_request(line);
    } catch (const ProtocolError& e) {
      send(error_reply(e.what()));
      if (e.command == "job" || e.command == "job-start" || e.command == "job-live" ||
          e.command == "job-culprits") {
        state_->handler.job_malformed(e.what(), peer_.credentials);
      }
      return;
    }
    const std::string name(command_name(request));
    if (const auto why = refusal(request, name)) return send(error_reply(*why));
    try {
      dispatch(request);
    } catch (const std::exception& e) {
      fail_async();
      send(error_reply(name + " failed: " + e.what()));
    } catch (...) {
      fail_async();
      send(error_reply(name + " failed: unknown error"));
    }
  }

  // Why this connection may not send `request` (named `name`) now: a
  // privileged command on the user socket or from an unprivileged peer, or
  // a read over the peer's rate; nullopt where it may.
  std::optional<std::string> refusal(const ControlRequest& request, const std::string& name) {
    const ControlServerOptions& options = state_->options;
    if (needs_privilege(request) && !options.privileged) {
      return "permission denied: '" + name + "' is not served on the user socket '" +
             options.socket_path + "'; root" +
             (options.group ? " and group " + *options.group : "") + " use '" +
             options.control_socket_path + "'";
    }
    const bool reads = std::holds_alternative<StatusRequest>(request) ||
                       std::holds_alternative<ResultsRequest>(request);
    if (reads && !peer_.privileged && !may_read(*state_, peer_.uid())) {
      return "too many status and results requests from uid " + std::to_string(peer_.uid()) +
             " (at most " + std::to_string(static_cast<long>(options.reads_per_second)) +
             " a second); try again later";
    }
    if (needs_privilege(request) && !peer_.privileged) {
      std::string message = "permission denied: '" + name + "' needs root";
      if (options.group) message += " or group " + *options.group;
      return message;
    }
    return std::nullopt;
  }

  // Hands `request` to the handler: its reply now, or (run, calibrate) a
  // Reply it calls when the round is done.
  void dispatch(const ControlRequest& request) {
    ControlHandler& handler = state_->handler;
    std::visit(
        [&](const auto& r) {
          using T = std::decay_t<decltype(r)>;
          if constexpr (std::is_same_v<T, StatusRequest>) {
            send(ok_reply(handler.status(peer_.privileged)));
          } else if constexpr (std::is_same_v<T, ResultsRequest>) {
            send(ok_reply(handler.results()));
          } else if constexpr (std::is_same_v<T, PauseRequest>) {
            send(ok_reply(handler.pause(r)));
          } else if constexpr (std::is_same_v<T, ResumeRequest>) {
            send(ok_reply(handler.resume()));
          } else if constexpr (std::is_same_v<T, PublishRequest>) {
            send(ok_reply(handler.publish(r)));
          } else if constexpr (std::is_same_v<T, JobRequest>) {
            send(ok_reply(handler.job(r, peer_.credentials)));
          } else if constexpr (std::is_same_v<T, JobStartRequest>) {
            send(ok_reply(handler.job_start(r, peer_.credentials)));
          } else if constexpr (std::is_same_v<T, JobLiveRequest>) {
            send(ok_reply(handler.job_live(r, peer_.credentials)));
          } else if constexpr (std::is_same_v<T, JobCulpritsRequest>) {
            send(ok_reply(handler.job_culprits(r, peer_.credentials)));
          } else if constexpr (std::is_same_v<T, RunRequest>) {
            busy_ = true;
            handler.run(r, make_reply());
          } else {
            static_assert(std::is_same_v<T, CalibrateRequest>);
            busy_ = true;
            handler.calibrate(make_reply());
          }
        },
        request);
  }

  // A handler that threw after taking a Reply must not also answer later.
  void fail_async() {
    if (reply_done_) reply_done_->store(true);
    reply_done_.reset();
    busy_ = false;
  }

  Reply make_reply() {
    reply_done_ = std::make_shared<std::atomic<bool>>(false);
    // Posting makes the callback safe from any thread, and keeps a handler
    // that replies synchronously from re-entering process().
    return [done = reply_done_, weak = weak_from_this(),
            executor = state_->io.get_executor()](json value) {
      if (done->exchange(true)) return;  // "exactly once": ignore a second call
      asio::post(executor, [done, weak, value = std::move(value)]() mutable {
        if (auto self = weak.lock()) {
          self->guard([&] { self->on_async_reply(done, std::move(value)); });
        }
      });
    };
  }

  void on_async_reply(const std::shared_ptr<std::atomic<bool>>& done, json value) {
    // Only the request in flight may answer: not one whose handler threw
    // (it got an error reply already), nor one of a closed connection.
    if (closed_ || done != reply_done_) return;
    reply_done_.reset();
    busy_ = false;
    send(ok_reply(std::move(value)));
    process();
    read();
    finish_if_done();
  }

  void send(const json& reply) {
    if (closed_) return;
    out_.push_back(encode_line(reply));
    out_bytes_ += out_.back().size();
    write();
  }

  void write() {
    if (writing_ || out_.empty() || closed_) return;
    writing_ = true;
    touch();
    asio::async_write(socket_, asio::buffer(out_.front()),
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        self->guard([&] { self->on_write(ec); });
                      });
  }

  void on_write(error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) return close();
    const bool was_full = output_full();
    out_bytes_ -= out_.front().size();
    out_.pop_front();
    touch();
    write();
    if (was_full && !output_full()) {  // the client reads again: so do we
      process();
      read();
    }
    finish_if_done();
  }

  // Closes once nothing more can happen: after a refusal, or after the
  // client's end of input, when every reply has been written.
  void finish_if_done() {
    if (closed_ || writing_ || !out_.empty()) return;
    if (close_after_write_ || (eof_ && !busy_ && pending_.empty())) close();
  }

  // The idle timeout runs while the connection waits on its client (to
  // send a request, or to read a reply), not while the daemon works on a
  // request: a `run` with wait may take minutes.
  void touch() {
    if (closed_) return;
    auto expiry = asio::steady_timer::clock_type::now() + state_->options.idle_timeout;
    if (line_started_) expiry = std::min(expiry, *line_started_ + state_->options.line_deadline);
    if (!peer_.privileged && state_->options.max_lifetime.count() > 0) {
      expiry = std::min(expiry, opened_ + state_->options.max_lifetime);
    }
    timer_.expires_at(expiry);
    timer_.async_wait(
        [self = shared_from_this()](error_code ec) { self->guard([&] { self->on_timer(ec); }); });
  }

  void on_timer(error_code ec) {
    if (ec || closed_) return;
    // A wait that was already due when touch() re-armed the timer cannot be
    // cancelled; the expiry tells whether it is still current.
    if (timer_.expiry() > asio::steady_timer::clock_type::now()) return;
    if (busy_ && !writing_) return touch();
    if (line_started_ && !eof_) {
      // Said, best effort, so that a slow client learns why.
      refuse(socket_, "request line not complete within " +
                          std::to_string(state_->options.line_deadline.count()) +
                          " ms of its first byte; closing the connection");
    }
    close();
  }

  // Nothing may escape into io_context::run: a failure here (e.g. out of
  // memory) costs this connection, not the daemon.
  template <typename F>
  void guard(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      try {
        close();
      } catch (...) {
      }
    }
  }

  std::shared_ptr<ControlServer::State> state_;
  Socket socket_;
  asio::steady_timer timer_;
  Peer peer_;
  std::optional<asio::steady_timer::time_point> line_started_;  // of the partial line in pending_
  const asio::steady_timer::time_point opened_ = asio::steady_timer::clock_type::now();
  std::array<char, 4096> chunk_{};
  std::string pending_;                            // received, not yet handled
  std::deque<std::string> out_;                    // replies, in order; front() is being written
  std::size_t out_bytes_ = 0;                      // their total size
  std::shared_ptr<std::atomic<bool>> reply_done_;  // of the request in flight
  bool reading_ = false;
  bool writing_ = false;
  bool busy_ = false;  // a run/calibrate is in flight
  bool eof_ = false;
  bool close_after_write_ = false;
  bool closed_ = false;
};

namespace {

using State = ControlServer::State;

void accept_next(const std::shared_ptr<State>& state);

// Root, or the control group by primary gid or membership.
bool privileged(State& state, const std::optional<PeerCredentials>& credentials) {
  if (!credentials) return false;
  if (credentials->uid == 0) return true;
  if (!state.group_gid) return false;
  if (credentials->gid == *state.group_gid) return true;
  const auto now = std::chrono::steady_clock::now();
  auto& answer = state.group_answers[credentials->uid];
  if (answer.asked == std::chrono::steady_clock::time_point{} ||
      now - answer.asked > std::chrono::minutes(1)) {
    answer = {user_in_group(credentials->uid, credentials->gid, *state.group_gid), now};
  }
  return answer.member;
}

bool may_read(State& state, uid_t uid) {
  const double rate = state.options.reads_per_second;
  if (rate <= 0) return true;
  const auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = state.read_budgets.try_emplace(uid);
  State::ReadBudget& budget = it->second;
  if (fresh) {
    budget = {2 * rate, now};
  } else {
    const double elapsed = std::chrono::duration<double>(now - budget.refilled).count();
    budget.tokens = std::min(2 * rate, budget.tokens + elapsed * rate);
    budget.refilled = now;
  }
  if (budget.tokens < 1) return false;
  budget.tokens -= 1;
  return true;
}

// Why `peer` may not open one more connection, or empty if it may.
std::string over_limit(const State& state, const ControlConnection::Peer& peer) {
  const ControlServerOptions& o = state.options;
  const std::size_t open = state.connections.size();
  if (peer.privileged) {
    if (open < o.max_connections) return {};
    return "too many connections to corenoised (at most " + std::to_string(o.max_connections) +
           "); try again later";
  }
  const uid_t uid = peer.uid();
  const auto mine = state.user_connections.find(uid);
  if (mine != state.user_connections.end() && mine->second >= o.max_connections_per_user) {
    return "too many connections to corenoised from uid " + std::to_string(uid) + " (at most " +
           std::to_string(o.max_connections_per_user) + " a user); try again later";
  }
  if (open + o.reserved_connections >= o.max_connections) {
    return "too many connections to corenoised (at most " +
           std::to_string(o.max_connections - std::min(o.reserved_connections, o.max_connections)) +
           " for users other than root and the control group); try again later";
  }
  return {};
}

void on_accept(const std::shared_ptr<State>& state, Socket socket) {
  set_cloexec(socket.native_handle());
  ControlConnection::Peer peer;
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 &&
      length == sizeof credentials) {
    peer.credentials = PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
  }
  peer.privileged = privileged(*state, peer.credentials);
  if (const std::string why = over_limit(*state, peer); !why.empty()) {
    refuse(socket, why);
    return;
  }
  // Opened only for a connection that is kept, and closed with it.
  if (peer.credentials) {
    peer.credentials->pidfd = open_peer_pidfd(socket.native_handle(), peer.credentials->pid);
  }
  if (!peer.privileged) ++state->user_connections[peer.uid()];
  std::shared_ptr<ControlConnection> connection;
  try {
    connection = std::make_shared<ControlConnection>(state, std::move(socket), peer);
  } catch (...) {
    if (peer.credentials && peer.credentials->pidfd >= 0) ::close(peer.credentials->pidfd);
    if (!peer.privileged) forget_user_connection(*state, peer.uid());
    throw;
  }
  state->connections.insert(connection);
  state->connection_count.fetch_add(1);
  connection->start();
}

void accept_next(const std::shared_ptr<State>& state) {
  if (state->stopped) return;
  state->acceptor.async_accept([state](error_code ec, Socket socket) {
    if (state->stopped || ec == asio::error::operation_aborted) return;
    if (ec) {
      // E.g. EMFILE: retry shortly rather than spin on a failing accept.
      state->retry_timer.expires_after(std::chrono::milliseconds(100));
      state->retry_timer.async_wait([state](error_code wait_ec) {
        if (!wait_ec) accept_next(state);
      });
      return;
    }
    try {
      on_accept(state, std::move(socket));
    } catch (...) {
      // The client's socket is closed by its destructor; keep accepting.
    }
    accept_next(state);
  });
}

// Throws for options a server cannot run with, naming them.
void check_options(const ControlServerOptions& o) {
  const std::string& path = o.socket_path;
  if (path.empty()) throw std::runtime_error("control socket: the socket path is empty");
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw std::runtime_error("control socket path '" + path + "' is too long (" +
                             std::to_string(path.size()) + " bytes; at most " +
                             std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + ")");
  }
  if (o.max_connections == 0 || o.max_line_bytes == 0 || o.idle_timeout.count() <= 0 ||
      o.line_deadline.count() <= 0 || o.max_connections_per_user == 0) {
    throw std::runtime_error(
        "control socket: max_connections, max_connections_per_user, max_line_bytes, "
        "idle_timeout and line_deadline must be > 0");
  }
  if (o.reserved_connections >= o.max_connections) {
    throw std::runtime_error(
        "control socket: reserved_connections (" + std::to_string(o.reserved_connections) +
        ") must be below max_connections (" + std::to_string(o.max_connections) + ")");
  }
}

// Removes a socket a stopped daemon left at `path`; throws where the path
// is no socket or a daemon still listens on it.
void remove_stale_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode)) {
    throw std::runtime_error("control socket path '" + path +
                             "' exists and is not a socket; refusing to remove it");
  }
  if (someone_listens(path)) {
    throw std::runtime_error("control socket '" + path +
                             "' is in use (is another corenoised running?)");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove stale control socket '" + path +
                             "': " + errno_text(errno));
  }
}

}  // namespace

ControlServer::ControlServer(asio::io_context& io, ControlHandler& handler,
                             ControlServerOptions options)
    : state_(std::make_shared<State>(io, handler, std::move(options))) {
  const ControlServerOptions& o = state_->options;
  const std::string& path = o.socket_path;
  check_options(o);
  // Before touching the file system, so a bad group leaves nothing behind.
  if (o.group) state_->group_gid = resolve_group(*o.group);
  remove_stale_socket(path);

  struct stat st {};
  auto& acceptor = state_->acceptor;
  try {
    acceptor.open(asio::local::stream_protocol());
    set_cloexec(acceptor.native_handle());
    acceptor.bind(asio::local::stream_protocol::endpoint(path));
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("cannot bind control socket '" + path + "': " + e.code().message());
  }
  if (::lstat(path.c_str(), &st) == 0) {
    state_->socket_created = true;
    state_->socket_dev = st.st_dev;
    state_->socket_ino = st.st_ino;
  }
  auto fail = [&](const std::string& message) {
    stop();
    throw std::runtime_error(message);
  };
  // Mode and group are set before listen(), so no client ever connects
  // through looser permissions.
  if (::chmod(path.c_str(), o.socket_mode) != 0) {
    fail("cannot chmod control socket '" + path + "': " + errno_text(errno));
  }
  if (state_->group_gid && ::chown(path.c_str(), static_cast<uid_t>(-1), *state_->group_gid) != 0) {
    fail("cannot give control socket '" + path + "' to group '" + *o.group +
         "': " + errno_text(errno));
  }
  error_code ec;
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on control socket '" + path + "': " + ec.message());
}

ControlServer::~ControlServer() { stop(); }

void ControlServer::start() {
  if (state_->started || state_->stopped) return;
  state_->started = true;
  accept_next(state_);
}

void ControlServer::stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  error_code ignored;
  s.acceptor.close(ignored);
  s.retry_timer.cancel(ignored);
  const auto connections = std::move(s.connections);
  s.connections.clear();
  for (const auto& connection : connections) connection->close();
  struct stat st {};
  if (s.socket_created && ::lstat(s.options.socket_path.c_str(), &st) == 0 &&
      st.st_dev == s.socket_dev && st.st_ino == s.socket_ino) {
    ::unlink(s.options.socket_path.c_str());
  }
}

const ControlServerOptions& ControlServer::options() const { return state_->options; }

std::size_t ControlServer::connection_count() const { return state_->connection_count.load(); }

}  // namespace corenoise

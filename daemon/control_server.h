// corenoised's control socket: a Unix stream socket speaking the protocol of
// control_protocol.h (docs/control.md) on the daemon's own io_context.
//
// Threading: single-threaded. Construct, start(), stop() and destroy on the
// thread that runs the io_context (or while it is not running); every
// ControlHandler method is called on that thread. The Reply callbacks given
// to ControlHandler::run/calibrate may be called from any thread, at any
// later time, exactly once: they post to the io_context, and a reply whose
// client has gone (or whose server was stopped) is dropped. The io_context
// must outlive every such call.
//
// Robustness: no client can crash or stall the daemon, nor keep root and
// the control group out. Lines are bounded (max_line_bytes) and must arrive
// whole within line_deadline of their first byte, unread replies are
// bounded (max_unread_reply_bytes), silent or non-reading clients are
// dropped after idle_timeout, connections are capped (max_connections,
// the last reserved_connections of them kept for root and the control
// group, and max_connections_per_user for any other uid), every completion
// handler catches everything (no exception reaches io_context::run), a
// handler that throws becomes an error reply, and a malformed line gets an
// error reply without closing the connection.
//
// Permissions: a server either serves every command (the control socket)
// or only those that need no privilege (the user socket, `privileged` off:
// status, results, job-start, job; docs/control.md, "Where: two sockets").
// Anyone who can open the socket (its mode and group) may send those; the
// handler, given the peer's SO_PEERCRED credentials and a pidfd of it,
// decides whether a job's line is taken. pause, resume, run, publish and
// calibrate need a server that serves them and a peer (SO_PEERCRED) with
// uid 0, or with `group` as its primary gid or as one of its user's
// supplementary groups (getgrouplist, cached a minute per uid).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "daemon/control_handler.h"

namespace corenoise {

struct ControlServerOptions {
  std::string socket_path = "/run/corenoise/ctl.sock";
  mode_t socket_mode = 0660;  // permission bits of the socket file
  // The control group, by name: the socket file's group (chown), and the
  // group whose members may send mutating commands. nullopt: the socket keeps
  // the daemon's group and only root may mutate.
  std::optional<std::string> group;
  // False: the user socket, which serves only the commands that need no
  // privilege, to anyone; a mutating command is refused naming
  // `control_socket_path`, where root and the group send it.
  bool privileged = true;
  std::string control_socket_path;
  std::size_t max_line_bytes = 64 * 1024;          // a longer request line: error reply, then close
  std::chrono::milliseconds idle_timeout{10'000};  // waiting on a client longer than this: close
  // A request line not complete this long after its first byte: close. A
  // client trickling a byte at a time would otherwise reset idle_timeout
  // forever.
  std::chrono::milliseconds line_deadline{10'000};
  std::size_t max_connections = 64;  // one more: error reply, then close
  // Of max_connections, this many only root and the control group may use.
  std::size_t reserved_connections = 16;
  // Open connections of one uid other than root's and the group's.
  std::size_t max_connections_per_user = 16;
  // A connection of such a uid is closed this long after it opened, however
  // it behaves (a newline every few seconds would otherwise hold it); 0:
  // never.
  std::chrono::milliseconds max_lifetime{0};
  // status and results of such a uid, a second (bursts of twice as many);
  // each renders a document on the event loop. 0: no limit.
  double reads_per_second = 0;
  // Replies written but not yet read by the client beyond this: its further
  // requests wait unread, so a client that sends without reading costs the
  // daemon this much memory at most (and is dropped after idle_timeout).
  std::size_t max_unread_reply_bytes = 1 << 20;
};

class ControlServer {
 public:
  // Binds and listens: removes a stale socket file (only a socket nobody
  // listens on), binds, chmods, chowns, listens. Does not accept until
  // start(). Throws std::runtime_error naming the path, or the group, and
  // what went wrong (another daemon listening, not a socket, unknown group,
  // bind/chown failure, path too long).
  ControlServer(boost::asio::io_context& io, ControlHandler& handler, ControlServerOptions options);
  ~ControlServer();  // stop()
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  void start();  // begin accepting
  // Closes the listener and every connection (pending async replies are
  // dropped) and unlinks the socket file. Idempotent.
  void stop();

  const ControlServerOptions& options() const;
  // Open connections right now. Readable from any thread (tests, metrics).
  std::size_t connection_count() const;

  struct State;  // shared with connections, so late completions find it

 private:
  std::shared_ptr<State> state_;
};

}  // namespace corenoise

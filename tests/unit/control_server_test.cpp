// A real ControlServer on a temporary socket, its io_context on its own
// thread as in corenoised, a fake ControlHandler, and real clients: the
// ControlClient, raw sockets, and (as root) a forked child running as
// `nobody`. No timing assertions beyond "eventually" (bounded waits).
#include "daemon/control_server.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon/control/control_client.h"
#include "daemon/control/control_protocol.h"
#include "daemon/control/control_replies.h"

namespace corenoise {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using namespace std::chrono_literals;

// Handler methods run on the io thread; the test thread reads what they saw
// under a mutex.
class FakeHandler : public ControlHandler {
 public:
  explicit FakeHandler(asio::io_context& io) : io_(io) {}

  json status(bool everything) override {
    std::lock_guard lock(mutex_);
    ++status_calls;
    if (throw_on_status) throw std::runtime_error("snapshot unavailable");
    return {{"paused", paused},
            {"everything", everything},
            {"summary", {{"pus", 4}, {"healthy", true}}}};
  }
  json results() override { return {{"cpus", json::array({{{"cpu", 0}}})}}; }
  json pause(const PauseRequest& request) override {
    std::lock_guard lock(mutex_);
    paused = true;
    last_pause = request;
    return {{"paused", true}};
  }
  json resume() override {
    std::lock_guard lock(mutex_);
    paused = false;
    return {{"paused", false}};
  }
  void run(const RunRequest& request, Reply reply) override {
    std::lock_guard lock(mutex_);
    ++run_calls;
    last_run = request;
    if (hold_run) {
      held = std::move(reply);  // the test answers, from its own thread
      return;
    }
    if (!request.wait) {
      reply({{"scheduled_unix_seconds", 1234}});
      return;
    }
    // The round "takes" 30 ms: the reply comes from a later event.
    auto timer = std::make_shared<asio::steady_timer>(io_, 30ms);
    timer->async_wait([timer, reply](boost::system::error_code) {
      reply({{"summary", {{"pus", 4}, {"healthy", false}}}, {"rounds", json::array()}});
    });
  }
  json publish(const PublishRequest& request) override {
    return {{"slowdowns", request.slowdowns.size()}};
  }
  void calibrate(Reply reply) override { reply({{"calibrated_cpus", 4}}); }  // synchronous
  json job_start(const JobStartRequest& request,
                 const std::optional<PeerCredentials>& peer) override {
    std::lock_guard lock(mutex_);
    ++job_start_calls;
    last_job_start = request;
    // The pidfd is the connection's: open while the handler runs.
    pidfd_open_in_handler = peer && peer->pidfd >= 0 && ::fcntl(peer->pidfd, F_GETFD) != -1;
    return {{"ok", true}};
  }
  json job(const JobRequest& request, const std::optional<PeerCredentials>& peer) override {
    std::lock_guard lock(mutex_);
    ++job_calls;
    last_job = request;
    last_job_peer = peer;
    pidfd_open_in_handler = peer && peer->pidfd >= 0 && ::fcntl(peer->pidfd, F_GETFD) != -1;
    return {{"cpus", request.cpus.size()}};
  }
  json job_live(const JobLiveRequest& request, const std::optional<PeerCredentials>&) override {
    std::lock_guard lock(mutex_);
    ++job_live_calls;
    last_job_live = request;
    return {{"ok", true}};
  }
  json job_culprits(const JobCulpritsRequest& request,
                    const std::optional<PeerCredentials>&) override {
    std::lock_guard lock(mutex_);
    last_job_culprits = request;
    return JobCulpritsReply{"off", {}};
  }
  void job_malformed(std::string_view error, const std::optional<PeerCredentials>&) override {
    std::lock_guard lock(mutex_);
    malformed_jobs.emplace_back(error);
  }

  std::mutex mutex_;
  int status_calls = 0;
  int run_calls = 0;
  int job_calls = 0;
  int job_start_calls = 0;
  int job_live_calls = 0;
  std::optional<JobLiveRequest> last_job_live;
  std::optional<JobCulpritsRequest> last_job_culprits;
  bool pidfd_open_in_handler = false;
  std::optional<JobStartRequest> last_job_start;
  bool paused = false;
  bool throw_on_status = false;
  bool hold_run = false;
  std::optional<PauseRequest> last_pause;
  std::optional<RunRequest> last_run;
  std::optional<JobRequest> last_job;
  std::optional<PeerCredentials> last_job_peer;
  std::vector<std::string> malformed_jobs;
  Reply held;

 private:
  asio::io_context& io_;
};

template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A raw client socket with a receive timeout, so a broken server fails the
// test instead of hanging it.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawClient() { close(); }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  bool send(const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }
  // The next line, or nullopt at end of stream (or after 5 s).
  std::optional<std::string> line() {
    for (;;) {
      if (const auto end = buffer_.find('\n'); end != std::string::npos) {
        std::string out = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return out;
      }
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  json reply() {
    const auto text = line();
    if (!text) return json();
    return json::parse(*text);
  }
  // True if the server closed the connection (no more data, EOF).
  bool closed_by_server() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/corenoise-ctl-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/ctl.sock";
  }

  void TearDown() override {
    stop_server();
    std::filesystem::remove_all(dir_);
  }

  // Constructed on this thread before the loop runs (allowed: the loop is
  // not running yet), then the loop runs on its own thread, as in corenoised.
  void start_server(ControlServerOptions options = {}) {
    options.socket_path = path_;
    server_ = std::make_unique<ControlServer>(io_, handler_, options);
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }

  // stop() belongs on the loop thread.
  void stop_server_on_loop() {
    std::promise<void> done;
    asio::post(io_, [&] {
      server_->stop();
      done.set_value();
    });
    done.get_future().wait();
  }

  void stop_server() {
    if (!thread_.joinable()) return;
    stop_server_on_loop();
    guard_.reset();
    thread_.join();
    server_.reset();
  }

  ControlClient client() const { return ControlClient(path_, 2s); }

  std::string dir_;
  std::string path_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_ = asio::make_work_guard(io_);
  FakeHandler handler_{io_};
  std::unique_ptr<ControlServer> server_;
  std::thread thread_;
};

TEST_F(ControlServerTest, AnswersStatusResultsPauseResumeAndPublish) {
  start_server();
  const ControlClient c = client();
  json reply = c.request(StatusRequest{});
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(reply["paused"], false);
  EXPECT_EQ(reply["summary"]["healthy"], true);

  reply = c.request(ResultsRequest{});
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(reply["cpus"][0]["cpu"], 0);

  // The test process is root (or the peer check would refuse these).
  if (::geteuid() == 0) {
    reply = c.request(PauseRequest{300});
    EXPECT_EQ(reply, json({{"ok", true}, {"paused", true}}));
    {
      std::lock_guard lock(handler_.mutex_);
      ASSERT_TRUE(handler_.last_pause);
      EXPECT_EQ(handler_.last_pause->seconds, 300);
    }
    EXPECT_EQ(c.request(StatusRequest{})["paused"], true);
    EXPECT_EQ(c.request(ResumeRequest{})["paused"], false);
    PublishRequest publish;
    publish.published_unix_seconds = 5;
    publish.reference = {{"nodes", 2}};
    publish.slowdowns = {{0, ratio_probe(ProbeKind::matmul), Mode::isolated, 1.1}};
    EXPECT_EQ(c.request(publish), json({{"ok", true}, {"slowdowns", 1}}));
  }
}

// What `corenoise job` sends at the end of a job, through the client's own
// call, arrives whole with the sender's credentials (the handler decides
// from them whether a rank sent it); a bad report is refused before the
// handler, which is told so that it can count it.
TEST_F(ControlServerTest, AJobReportReachesTheHandler) {
  start_server();
  const ControlClient c = client();
  JobRequest report;
  report.job_id = "slurm-1234";
  report.ended_unix_seconds = 1795963000.5;
  report.elapsed_seconds = 12.5;
  report.ranks = 4;
  report.cpus = {{3, {0.12, 0, 0.01, 0, 0, 0, 0.3}}, {5, {}}};
  EXPECT_EQ(c.report_job(report, 2s), json({{"ok", true}, {"cpus", 2}}));
  {
    std::lock_guard lock(handler_.mutex_);
    ASSERT_TRUE(handler_.last_job);
    EXPECT_EQ(to_json(*handler_.last_job), to_json(report));
    ASSERT_TRUE(handler_.last_job_peer);
    EXPECT_EQ(handler_.last_job_peer->pid, ::getpid());
    EXPECT_EQ(handler_.last_job_peer->uid, ::geteuid());
    EXPECT_EQ(handler_.last_job_peer->gid, ::getegid());
    EXPECT_TRUE(handler_.pidfd_open_in_handler) << "the peer came without a pidfd";
    EXPECT_TRUE(handler_.malformed_jobs.empty());
  }
  report.cpus[0].lost_seconds[index_of(JobCause::steal)] = 13;  // more than the job's wall time
  const json refused = c.report_job(report, 2s);
  EXPECT_EQ(refused["ok"], false);
  EXPECT_EQ(refused["error"],
            "job: 'cpus[0].lost_seconds.steal' must be a number >= 0 and <= elapsed_seconds "
            "(12.5), got 13.0");
  // Another command's bad line is not a job report.
  EXPECT_EQ(c.request(json{{"command", "pause"}, {"seconds", -1}}, 2s)["ok"], false);
  std::lock_guard lock(handler_.mutex_);
  EXPECT_EQ(handler_.job_calls, 1);
  EXPECT_EQ(handler_.malformed_jobs, std::vector<std::string>{refused["error"].get<std::string>()});
}

TEST_F(ControlServerTest, RunWithWaitRepliesWhenTheRoundIsDone) {
  if (::geteuid() != 0)
    GTEST_FAIL() << "run is a mutating command: this test needs root, as CI runs";
  start_server();
  const ControlClient c = client();
  RunRequest run;
  run.modes = {Mode::isolated, Mode::concurrent};
  run.at_unix_seconds = 17;
  const json reply = c.request(run, 5s);
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(reply["summary"]["healthy"], false);
  {
    std::lock_guard lock(handler_.mutex_);
    ASSERT_TRUE(handler_.last_run);
    EXPECT_EQ(handler_.last_run->modes, (std::vector<Mode>{Mode::isolated, Mode::concurrent}));
    EXPECT_EQ(handler_.last_run->at_unix_seconds, 17);
    EXPECT_TRUE(handler_.last_run->wait);
  }
  run.wait = false;
  EXPECT_EQ(c.request(run, 5s)["scheduled_unix_seconds"], 1234);
  // A handler that replies synchronously, inside its own call, works too.
  EXPECT_EQ(c.request(CalibrateRequest{}), json({{"ok", true}, {"calibrated_cpus", 4}}));
}

TEST_F(ControlServerTest, PipelinedRequestsAreAnsweredInOrder) {
  if (::geteuid() != 0)
    GTEST_FAIL() << "run is a mutating command: this test needs root, as CI runs";
  start_server();
  RawClient raw(path_);
  ASSERT_TRUE(raw.connected());
  // The run's reply comes 30 ms later; the status after it must wait its turn.
  ASSERT_TRUE(
      raw.send("{\"command\":\"run\"}\n{\"command\":\"status\"}\n{\"command\":\"calibrate\"}\n"));
  const json first = raw.reply();
  const json second = raw.reply();
  const json third = raw.reply();
  EXPECT_EQ(first["summary"]["healthy"], false) << first;
  EXPECT_EQ(second["paused"], false) << second;
  EXPECT_EQ(third["calibrated_cpus"], 4) << third;
}

TEST_F(ControlServerTest, MalformedLinesGetAnErrorAndTheConnectionStaysUsable) {
  start_server();
  RawClient raw(path_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.send("{bad json\n"));
  json reply = raw.reply();
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("malformed request"), std::string::npos);

  ASSERT_TRUE(raw.send("{\"command\":\"pause\",\"seconds\":\"x\"}\n"));
  reply = raw.reply();
  EXPECT_EQ(reply["error"], "pause: 'seconds' must be a number > 0, got \"x\"");

  ASSERT_TRUE(raw.send("{\"command\":\"st\xff\"}\n[]\n\n"));  // bad UTF-8, an array, an empty line
  for (int i = 0; i < 3; ++i) EXPECT_EQ(raw.reply()["ok"], false);

  // Split across writes, with CRLF: still one request.
  ASSERT_TRUE(raw.send("{\"command\":"));
  ASSERT_TRUE(raw.send("\"status\"}\r\n"));
  EXPECT_EQ(raw.reply()["ok"], true);
}

TEST_F(ControlServerTest, HandlerExceptionsBecomeErrorReplies) {
  start_server();
  {
    std::lock_guard lock(handler_.mutex_);
    handler_.throw_on_status = true;
  }
  RawClient raw(path_);
  ASSERT_TRUE(raw.send("{\"command\":\"status\"}\n"));
  EXPECT_EQ(raw.reply(), json({{"ok", false}, {"error", "status failed: snapshot unavailable"}}));
  ASSERT_TRUE(raw.send("{\"command\":\"results\"}\n"));
  EXPECT_EQ(raw.reply()["ok"], true);
}

TEST_F(ControlServerTest, ALineOverTheLimitIsRefusedAndTheConnectionClosed) {
  ControlServerOptions options;
  options.max_line_bytes = 1024;
  start_server(options);

  // Exactly at the limit is fine.
  std::string at_limit = "{\"command\":\"status\"}";
  at_limit.insert(1, 1024 - at_limit.size(), ' ');
  ASSERT_EQ(at_limit.size(), 1024u);
  RawClient ok(path_);
  ASSERT_TRUE(ok.send(at_limit + "\n"));
  EXPECT_EQ(ok.reply()["ok"], true);

  // A line without an end, past the limit.
  RawClient raw(path_);
  ASSERT_TRUE(raw.send(std::string(4000, ' ')));
  const json reply = raw.reply();
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("longer than 1024 bytes"), std::string::npos);
  EXPECT_TRUE(raw.closed_by_server());

  // The ControlClient reports the daemon's refusal as a reply, not a throw.
  const json big = {{"command", "status"}, {"padding", std::string(5000, 'x')}};
  const json refused = client().request(big, 5s);
  EXPECT_EQ(refused["ok"], false);
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 1; }));  // `ok` remains
}

TEST_F(ControlServerTest, ASilentClientIsDroppedAfterTheIdleTimeout) {
  ControlServerOptions options;
  options.idle_timeout = 150ms;
  start_server(options);
  RawClient raw(path_);
  ASSERT_TRUE(raw.connected());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(raw.closed_by_server());  // blocks until the server closes (or 5 s)
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 0; }));

  // A client that talks keeps its connection past the timeout.
  RawClient talker(path_);
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(60ms);
    ASSERT_TRUE(talker.send("{\"command\":\"status\"}\n"));
    ASSERT_EQ(talker.reply()["ok"], true) << "round " << i;
  }
}

// Requests pipelined faster than their replies are read: the server stops
// reading once max_unread_reply_bytes are queued, and resumes as the client
// reads, losing nothing.
TEST_F(ControlServerTest, UnreadRepliesHoldBackRequestsWithoutLosingAny) {
  ControlServerOptions options;
  options.max_unread_reply_bytes = 4096;
  start_server(options);
  RawClient raw(path_);
  constexpr int kRequests = 3000;
  std::string batch;
  for (int i = 0; i < kRequests; ++i) batch += "{\"command\":\"status\"}\n";
  std::thread sender([&] { raw.send(batch); });
  for (int i = 0; i < kRequests; ++i) ASSERT_EQ(raw.reply()["ok"], true) << "reply " << i;
  sender.join();
  std::lock_guard lock(handler_.mutex_);
  EXPECT_EQ(handler_.status_calls, kRequests);
}

// A client that sends without ever reading cannot make the daemon buffer
// replies without end (once, 360 MB in 15 s): its requests stay unread once
// its replies back up, and it is dropped after the idle timeout.
TEST_F(ControlServerTest, AClientThatNeverReadsIsHeldBackAndDropped) {
  ControlServerOptions options;
  options.max_unread_reply_bytes = 4096;
  options.idle_timeout = 300ms;
  start_server(options);
  RawClient raw(path_);
  std::string batch;
  for (int i = 0; i < 200; ++i) batch += "{\"command\":\"status\"}\n";
  std::size_t sent = 0;
  auto last_progress = std::chrono::steady_clock::now();
  const auto give_up = last_progress + 10s;
  while (sent < (50u << 20) && std::chrono::steady_clock::now() < give_up &&
         std::chrono::steady_clock::now() - last_progress < 200ms) {
    const ssize_t n = ::send(raw.fd(), batch.data(), batch.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      last_progress = std::chrono::steady_clock::now();
    } else if (n < 0 && errno != EAGAIN) {
      break;  // dropped already
    }
  }
  // Socket buffers take a few hundred KiB; the server took no more.
  EXPECT_LT(sent, 4u << 20) << "the server kept reading a client that does not read";
  {
    std::lock_guard lock(handler_.mutex_);
    EXPECT_LT(handler_.status_calls, 40000);
  }
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 0; }))
      << "a client that does not read was not dropped";
}

TEST_F(ControlServerTest, ConnectionsBeyondTheCapGetAnErrorAndAreClosed) {
  ControlServerOptions options;
  options.max_connections = 2;
  options.reserved_connections = 0;
  start_server(options);
  RawClient a(path_), b(path_);
  for (RawClient* raw : {&a, &b}) {  // a reply proves the server holds the connection
    ASSERT_TRUE(raw->send("{\"command\":\"status\"}\n"));
    ASSERT_EQ(raw->reply()["ok"], true);
  }
  RawClient third(path_);
  ASSERT_TRUE(third.connected());
  const json reply = third.reply();
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("too many connections"), std::string::npos);
  EXPECT_TRUE(third.closed_by_server());

  a.close();
  ASSERT_TRUE(eventually([&] { return server_->connection_count() == 1; }));
  EXPECT_EQ(client().request(StatusRequest{})["ok"], true);
}

TEST_F(ControlServerTest, AClientGoneBeforeAnAsyncReplyCrashesNothing) {
  if (::geteuid() != 0)
    GTEST_FAIL() << "run is a mutating command: this test needs root, as CI runs";
  {
    std::lock_guard lock(handler_.mutex_);
    handler_.hold_run = true;
  }
  start_server();
  {
    RawClient raw(path_);
    ASSERT_TRUE(raw.send("{\"command\":\"run\"}\n"));
    ASSERT_TRUE(eventually([&] {
      std::lock_guard lock(handler_.mutex_);
      return handler_.run_calls == 1;
    }));
  }  // closes: the client is gone while the round "runs"
  ASSERT_TRUE(eventually([&] { return server_->connection_count() == 0; }));
  Reply held;
  {
    std::lock_guard lock(handler_.mutex_);
    held = handler_.held;
  }
  held({{"summary", {{"healthy", true}}}});  // from this thread, to nobody
  held({{"again", true}});                   // a second call is ignored
  EXPECT_EQ(client().request(StatusRequest{})["ok"], true);

  // The ControlClient gives up after its timeout, naming the socket.
  try {
    client().request(RunRequest{}, 100ms);
    ADD_FAILURE() << "expected a timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no reply from corenoised at '" + path_ + "'"),
              std::string::npos)
        << e.what();
  }
  // Stopping with a request in flight closes the client; the late reply is dropped.
  RawClient waiting(path_);
  ASSERT_TRUE(waiting.send("{\"command\":\"run\"}\n"));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(handler_.mutex_);
    return handler_.run_calls == 3;
  }));
  stop_server_on_loop();
  EXPECT_TRUE(waiting.closed_by_server());
  {
    std::lock_guard lock(handler_.mutex_);
    held = handler_.held;
  }
  held({{"late", true}});
  EXPECT_FALSE(std::filesystem::exists(path_));  // stop() unlinks the socket
}

TEST_F(ControlServerTest, AHalfClosedClientStillGetsItsReplies) {
  start_server();
  RawClient raw(path_);
  ASSERT_TRUE(
      raw.send("{\"command\":\"status\"}\n{\"command\":\"results\"}"));  // last unterminated
  raw.shutdown_write();  // as `nc -N` or socat do after their input
  EXPECT_EQ(raw.reply()["paused"], false);
  EXPECT_EQ(raw.reply()["ok"], true);
  EXPECT_TRUE(raw.closed_by_server());
}

TEST_F(ControlServerTest, SocketFileModeGroupAndStaleFiles) {
  // A stale socket (bound, nobody listening) is replaced.
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ::close(fd);
  }
  ControlServerOptions options;
  options.socket_mode = 0640;
  start_server(options);
  struct stat st {};
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(client().request(StatusRequest{})["ok"], true);

  // A live daemon's socket is not stolen.
  ControlServerOptions same;
  same.socket_path = path_;
  asio::io_context other;
  try {
    ControlServer second(other, handler_, same);
    ADD_FAILURE() << "a second server took a live socket";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  stop_server();
  EXPECT_FALSE(std::filesystem::exists(path_));

  // The default mode is 0660.
  {
    asio::io_context io;
    ControlServer server(io, handler_, same);
    ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
  }
  EXPECT_FALSE(std::filesystem::exists(path_));  // the destructor stops and unlinks

  // A file that is not a socket is left alone.
  {
    std::FILE* f = std::fopen(path_.c_str(), "w");
    std::fclose(f);
  }
  try {
    ControlServer server(other, handler_, same);
    ADD_FAILURE() << "a regular file was replaced";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a socket"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(path_));
  std::filesystem::remove(path_);

  // An unknown group is an error naming it; a known one owns the socket.
  ControlServerOptions grouped = same;
  grouped.group = "no-such-group-corenoise";
  try {
    ControlServer server(other, handler_, grouped);
    ADD_FAILURE() << "an unknown group was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-group-corenoise' does not exist"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path_));
  if (::geteuid() == 0 && ::getgrnam("nogroup") != nullptr) {
    grouped.group = "nogroup";
    ControlServer server(other, handler_, grouped);
    ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
    EXPECT_EQ(st.st_gid, ::getgrnam("nogroup")->gr_gid);
  }

  // A path too long for sockaddr_un says so.
  ControlServerOptions too_long = same;
  too_long.socket_path = dir_ + "/" + std::string(200, 'x');
  EXPECT_THROW(ControlServer(other, handler_, too_long), std::runtime_error);
}

TEST(ControlClient, ErrorsNameTheSocketAndSuggestTheDaemonIsNotRunning) {
  try {
    ControlClient("/nonexistent/corenoise.sock").request(StatusRequest{});
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'/nonexistent/corenoise.sock'"), std::string::npos) << message;
    EXPECT_NE(message.find("is corenoised running?"), std::string::npos) << message;
  }
  EXPECT_EQ(default_reply_timeout(RunRequest{}), std::chrono::seconds(120));
  EXPECT_EQ(default_reply_timeout(CalibrateRequest{}), std::chrono::seconds(120));
  EXPECT_EQ(default_reply_timeout(StatusRequest{}), std::chrono::seconds(10));
}

// Requests sent by a forked child that drops to uid `uid` / gid `gid` with no
// supplementary groups. After fork() in a threaded process the child uses
// only system calls (no allocation); the replies come back through a pipe.
std::vector<json> requests_as(const std::string& path, uid_t uid, gid_t gid,
                              const std::vector<std::string>& lines) {
  std::string wire;
  for (const auto& line : lines) wire += line + "\n";
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  const std::size_t expected_lines = lines.size();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(10);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(11);
    if (::write(fd, wire.data(), wire.size()) != static_cast<ssize_t>(wire.size())) ::_exit(12);
    static char buffer[65536];
    std::size_t seen = 0;
    while (seen < expected_lines) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) ::_exit(13);
      for (ssize_t i = 0; i < n; ++i) seen += buffer[i] == '\n' ? 1 : 0;
      if (::write(pipe_fds[1], buffer, static_cast<std::size_t>(n)) != n) ::_exit(14);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) {
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::vector<json> replies;
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    replies.push_back(json::parse(text.substr(start, end - start)));
  }
  return replies;
}

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

TEST_F(ControlServerTest, AnUnprivilegedPeerMayReadButNotMutate) {
  if (::geteuid() != 0) GTEST_FAIL() << "this test needs root, to fork a child that becomes nobody";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);  // nobody must reach the socket
  ControlServerOptions options;
  options.socket_mode = 0666;
  start_server(options);
  const auto replies = requests_as(
      path_, kNobody, kNogroup,
      {R"({"command":"status"})", R"({"command":"pause"})", R"({"command":"run"})",
       R"({"command":"results"})",
       R"({"command":"job","job_id":"j","ended_unix_seconds":1,"elapsed_seconds":2,"ranks":1,)"
       R"("cpus":[{"cpu":0,"lost_seconds":{"steal":1}}]})",
       R"({"command":"job-start","job_id":"j"})"});
  ASSERT_EQ(replies.size(), 6u);
  EXPECT_EQ(replies[5], json({{"ok", true}}));
  EXPECT_EQ(replies[0]["ok"], true);
  EXPECT_EQ(replies[1], json({{"ok", false}, {"error", "permission denied: 'pause' needs root"}}));
  EXPECT_EQ(replies[2]["error"], "permission denied: 'run' needs root");
  EXPECT_EQ(replies[3]["ok"], true);
  // A job's ranks run as the job's user: job is not a privileged command.
  EXPECT_EQ(replies[4], json({{"ok", true}, {"cpus", 1}}));
  std::lock_guard lock(handler_.mutex_);
  EXPECT_FALSE(handler_.paused);
  EXPECT_EQ(handler_.run_calls, 0);
  EXPECT_EQ(handler_.job_calls, 1);
  EXPECT_EQ(handler_.job_start_calls, 1);
}

// The user socket: every command that needs no privilege, to anyone; a
// mutating one is refused to root too, naming the control socket.
TEST_F(ControlServerTest, TheUserSocketServesNoMutatingCommand) {
  ControlServerOptions options;
  options.privileged = false;
  options.control_socket_path = "/run/corenoise/ctl.sock";
  options.group = "nogroup";
  start_server(options);
  const ControlClient c = client();
  const json status = c.request(StatusRequest{});
  EXPECT_EQ(status["ok"], true);
  // What concerns other users depends on who asks (root here), not the socket.
  EXPECT_EQ(status["everything"], ::geteuid() == 0);
  EXPECT_EQ(
      c.request(PauseRequest{}),
      json({{"ok", false},
            {"error", "permission denied: 'pause' is not served on the user socket '" + path_ +
                          "'; root and group nogroup use '/run/corenoise/ctl.sock'"}}));
  EXPECT_EQ(c.request(ResumeRequest{})["ok"], false);
  EXPECT_EQ(c.request(CalibrateRequest{})["ok"], false);
  std::lock_guard lock(handler_.mutex_);
  EXPECT_FALSE(handler_.paused);
  EXPECT_EQ(handler_.run_calls, 0);
}

// Connections a child holds as `uid`:`gid`, opened one by one, each proven
// held by a status reply; what the one after them was told. The child holds
// them until release().
class HeldConnections {
 public:
  HeldConnections(const std::string& path, uid_t uid, gid_t gid, int count) {
    int ready[2], release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) return;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    pid_ = ::fork();
    if (pid_ == 0) {
      // Nothing of the parent's: another holder's release pipe, or the
      // server's sockets, kept open here would outlive their owners.
      for (int fd = 3; fd < 1024; ++fd) {
        if (fd != ready[1] && fd != release[0]) ::close(fd);
      }
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(10);
      static const char kStatus[] = "{\"command\":\"status\"}\n";
      static char buffer[4096];
      for (int i = 0; i <= count; ++i) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(11);
        // A refused connection is told at once, unasked; a held one answers
        // a status (proof that the server counts it before the next).
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) == 0 && ::write(fd, kStatus, sizeof kStatus - 1) < 0) ::_exit(13);
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (i == count && n > 0) {
          if (::write(ready[1], buffer, static_cast<std::size_t>(n)) != n) ::_exit(12);
        }
      }
      ::close(ready[1]);
      char c;
      while (::read(release[0], &c, 1) > 0) {
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_fd_ = release[1];
    char chunk[4096];
    for (ssize_t n; (n = ::read(ready[0], chunk, sizeof chunk)) > 0;) {
      last_reply_.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(ready[0]);
  }
  ~HeldConnections() { release(); }
  // The reply to the connection after `count`, as the daemon wrote it.
  const std::string& last_reply() const { return last_reply_; }
  void release() {
    if (pid_ <= 0) return;
    ::close(release_fd_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int release_fd_ = -1;
  std::string last_reply_;
};

// One user holding every connection it may cannot keep root, nor another
// user, out: connections per uid are capped, and the last of the server's
// are kept for root and the control group.
TEST_F(ControlServerTest, AUserAtItsCapIsTurnedAwayWhileRootAndOthersAreServed) {
  if (::geteuid() != 0) GTEST_FAIL() << "this test needs root, to fork children as other users";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ControlServerOptions options;
  options.socket_mode = 0666;
  options.max_connections = 8;
  options.reserved_connections = 3;
  options.max_connections_per_user = 4;
  start_server(options);
  HeldConnections nobody(path_, kNobody, kNogroup, 4);
  EXPECT_NE(nobody.last_reply().find("too many connections to corenoised from uid 65534 (at most "
                                     "4 a user)"),
            std::string::npos)
      << nobody.last_reply();
  // Another user gets one of what is left for users (8 - 3 - 4 = 1)...
  HeldConnections daemon_user(path_, 1, 1, 1);
  EXPECT_NE(daemon_user.last_reply().find("for users other than root and the control group"),
            std::string::npos)
      << daemon_user.last_reply();
  // ... and root one of the three kept.
  EXPECT_EQ(client().request(StatusRequest{})["ok"], true);
  RawClient a(path_), b(path_), c(path_);
  for (RawClient* raw : {&a, &b, &c}) {
    ASSERT_TRUE(raw->send("{\"command\":\"status\"}\n"));
    EXPECT_EQ(raw->reply()["ok"], true);
  }
  nobody.release();
  daemon_user.release();
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 3; }));
}

// A client that trickles a line a byte at a time keeps resetting the idle
// timer; the line's own deadline still ends it.
TEST_F(ControlServerTest, ATrickledLineIsCutAtItsDeadline) {
  ControlServerOptions options;
  options.idle_timeout = 2s;
  options.line_deadline = 400ms;
  start_server(options);
  RawClient raw(path_);
  ASSERT_TRUE(raw.connected());
  const std::string line = "{\"command\":\"status\"}";
  const auto start = std::chrono::steady_clock::now();
  std::size_t sent = 0;
  for (; sent < line.size() && std::chrono::steady_clock::now() - start < 5s; ++sent) {
    if (!raw.send(line.substr(sent, 1))) break;
    std::this_thread::sleep_for(100ms);
    if (server_->connection_count() == 0) break;
  }
  EXPECT_LT(sent, line.size()) << "the whole line went through, one byte every 100 ms";
  const json reply = raw.reply();
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply.value("error", "").find("request line not complete within 400 ms"),
            std::string::npos)
      << reply;
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 0; }));
}

// A user's status and results are rationed (each renders a document on
// the loop that serves root); root's are not.
TEST_F(ControlServerTest, AUsersReadsAreRationedAndRootsAreNot) {
  if (::geteuid() != 0) GTEST_FAIL() << "this test needs root, to fork a child that becomes nobody";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ControlServerOptions options;
  options.socket_mode = 0666;
  options.reads_per_second = 4;  // bursts of 8
  start_server(options);
  const auto replies = requests_as(path_, kNobody, kNogroup,
                                   std::vector<std::string>(12, R"({"command":"status"})"));
  ASSERT_EQ(replies.size(), 12u);
  int served = 0;
  for (const json& reply : replies) {
    if (reply["ok"] == true) {
      ++served;
    } else {
      EXPECT_EQ(reply["error"],
                "too many status and results requests from uid 65534 (at most 4 a second); try "
                "again later");
    }
  }
  EXPECT_GE(served, 8);  // the burst, and what refilled meanwhile
  EXPECT_LT(served, 12);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(client().request(StatusRequest{})["ok"], true) << i;
}

// A user's connection ends at its lifetime, however it behaves; root's does
// not.
TEST_F(ControlServerTest, AUsersConnectionEndsAtItsLifetime) {
  if (::geteuid() != 0) GTEST_FAIL() << "this test needs root, to fork a child that becomes nobody";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ControlServerOptions options;
  options.socket_mode = 0666;
  options.idle_timeout = 5s;
  options.max_lifetime = 300ms;
  start_server(options);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) {
      ::_exit(10);
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(11);
    // Wait up to 3 s (well under the idle timeout) for the daemon to close it.
    pollfd p{fd, POLLIN, 0};
    char c;
    const char* verdict = ::poll(&p, 1, 3000) == 1 && ::read(fd, &c, 1) == 0 ? "closed" : "open";
    if (::write(pipe_fds[1], verdict, std::strlen(verdict)) < 0) ::_exit(12);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char text[16] = {};
  const ssize_t n = ::read(pipe_fds[0], text, sizeof text - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_GT(n, 0) << "child status " << status;
  EXPECT_STREQ(text, "closed");
  // Root's connection outlives it.
  RawClient raw(path_);
  std::this_thread::sleep_for(600ms);
  ASSERT_TRUE(raw.send("{\"command\":\"status\"}\n"));
  EXPECT_EQ(raw.reply()["ok"], true);
}

TEST_F(ControlServerTest, TheControlGroupMayMutate) {
  if (::geteuid() != 0) GTEST_FAIL() << "this test needs root, to fork a child that becomes nobody";
  if (::getgrnam("nogroup") == nullptr) GTEST_FAIL() << "this test needs Debian's group 'nogroup'";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ControlServerOptions options;
  options.socket_mode = 0666;
  options.group = "nogroup";
  start_server(options);
  // nobody with primary group nogroup: a member.
  auto replies = requests_as(path_, kNobody, kNogroup, {R"({"command":"pause","seconds":5})"});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], json({{"ok", true}, {"paused", true}}));
  // nobody with another primary group, and not listed in nogroup: refused,
  // and the message names the group.
  replies = requests_as(path_, kNobody, 1, {R"({"command":"resume"})"});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["error"], "permission denied: 'resume' needs root or group nogroup");
}

}  // namespace
}  // namespace corenoise

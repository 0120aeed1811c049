// The exporter's HTTP server as a client sees it, over loopback: a stalled
// client dropped at its deadline while others are served, the connection
// cap, IPv6, TLS (with curl, the client Prometheus's peers use), basic
// auth right, wrong and missing, client certificates, a reload of the web
// config, and the web config file's errors. No timing assertions: a
// deadline is checked by what happens, with generous bounds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../tls_files.h"
#include "daemon/exporter.h"
#include "daemon/web_config.h"
#include "served_exporter.h"

namespace corenoise {
namespace {

using namespace std::chrono_literals;
using testing::bcrypt_hash;
using testing::TlsFiles;

Snapshot some_snapshot() {
  Snapshot s;
  s.version = "test";
  s.paused = true;
  return s;
}

struct Server {
  SnapshotStore store;
  ExporterLoop loop;
  std::unique_ptr<Exporter> exporter;
  explicit Server(std::shared_ptr<const WebConfig> web = nullptr, ExporterLimits limits = {},
                  const std::string& listen = "127.0.0.1:0") {
    store.set(std::make_shared<const Snapshot>(some_snapshot()));
    exporter = std::make_unique<Exporter>(loop.io, listen, store, std::move(web), limits);
    loop.start();
  }
  ~Server() {
    loop.stop();
    exporter.reset();
  }
  int port() const { return exporter->port(); }
  // set_web_config() on the loop's thread, as the daemon's reload calls it.
  void reload(std::shared_ptr<const WebConfig> web) {
    std::promise<void> done;
    boost::asio::post(loop.io, [&] {
      exporter->set_web_config(web);
      done.set_value();
    });
    done.get_future().wait();
  }
};

// A TCP connection to 127.0.0.1:port that sends what it is told, with a
// receive timeout that fails a test rather than hanging it.
class RawClient {
 public:
  explicit RawClient(int port, const char* from = nullptr) : fd_(connect_loopback(port, 20, from)) {
    if (fd_ < 0) throw std::runtime_error("connect failed");
  }
  ~RawClient() { close(); }
  void send(const std::string& text) { ::send(fd_, text.data(), text.size(), MSG_NOSIGNAL); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Everything until the server closes (or the 20 s timeout: "timeout").
  std::string read_to_end() {
    std::string out;
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0) return out;
      if (n < 0) return errno == EAGAIN ? out + "timeout" : out;
      out.append(buffer, static_cast<std::size_t>(n));
    }
  }
  // True while the server has neither answered nor closed.
  bool still_waiting() {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    return n < 0 && errno == EAGAIN;
  }

 private:
  int fd_ = -1;
};

struct CommandResult {
  int status = -1;
  std::string out;
};

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) r.out += buffer;
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// curl's HTTP status for `url` ("000" when no reply came) then the body;
// `options` as on curl's command line.
std::string curl(const std::string& options, const std::string& url) {
  return run("curl -sS --max-time 20 -o - -w '\\n%{http_code}' " + options + " '" + url + "'").out;
}

std::string status_of(const std::string& curl_output) {
  return curl_output.substr(curl_output.rfind('\n') + 1);
}

std::string web_yml(const TlsFiles& tls, const std::string& body) {
  return tls.write("web.yml", body);
}

// --- plain HTTP: deadline and cap -------------------------------------------

TEST(ExporterServer, AStalledClientIsDroppedAtItsDeadlineWhileAnotherIsServed) {
  ExporterLimits limits;
  limits.deadline = 1s;
  Server server(nullptr, limits);
  RawClient stalled(server.port());
  stalled.send("GET /metrics HTTP/1.1\r\nHost: 127.");  // and nothing more
  const HttpResponse other = http(server.port(), "GET", "/metrics");
  EXPECT_EQ(other.status, 200);
  EXPECT_NE(other.body.find("corenoise_paused 1"), std::string::npos) << other.body;
  // Dropped without a reply, well before the client's own 20 s timeout.
  EXPECT_EQ(stalled.read_to_end(), "");
}

// At the cap, a new scrape takes the place of the oldest connection that
// has sent nothing (before: it was closed at accept, so idle connections
// from a few hosts could hold every scrape off).
TEST(ExporterServer, AtTheCapANewScrapeClosesTheOldestSilentConnection) {
  ExporterLimits limits;
  limits.max_connections = 3;
  Server server(nullptr, limits);
  RawClient oldest(server.port(), "127.0.0.3");
  RawClient second(server.port(), "127.0.0.4");
  RawClient third(server.port(), "127.0.0.5");
  // Accepted after the three (the listen queue is in order): at the cap.
  const HttpResponse scrape = http(server.port(), "GET", "/metrics", "", "127.0.0.2");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_EQ(oldest.read_to_end(), "") << "closed without a reply";
  EXPECT_TRUE(second.still_waiting());
  EXPECT_TRUE(third.still_waiting());
}

// One host holding idle connections (reopening them as they are dropped)
// gets max_per_peer of them; the rest are closed at accept, and another
// host's scrape is served. Before: it held all 32 and every scrape was
// closed at accept.
TEST(ExporterServer, OneHostCannotFillTheConnectionCap) {
  Server server;  // 32 connections, 4 a peer
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<RawClient>(server.port()));
  const auto started = std::chrono::steady_clock::now();
  const HttpResponse scrape = http(server.port(), "GET", "/metrics", "", "127.0.0.2");
  EXPECT_EQ(scrape.status, 200);
  // Not a latency goal: only that it was not left to a deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  int open = 0;
  for (auto& c : idle) open += c->still_waiting() ? 1 : 0;
  EXPECT_EQ(open, 4) << "of 40 idle connections from 127.0.0.1";
}

// A client that has not sent its whole request by request_deadline is
// dropped then, long before the whole deadline (here 60 s, past the
// client's own 20 s timeout, which would read "timeout").
TEST(ExporterServer, AClientSilentPastTheRequestDeadlineIsDropped) {
  ExporterLimits limits;
  limits.request_deadline = 1s;
  limits.deadline = 60s;
  Server server(nullptr, limits);
  RawClient silent(server.port());
  RawClient partial(server.port());
  partial.send("GET /metrics HTTP/1.1\r\nHost: 127.");
  EXPECT_EQ(silent.read_to_end(), "");
  EXPECT_EQ(partial.read_to_end(), "");
  EXPECT_EQ(http(server.port(), "GET", "/metrics").status, 200);
}

// An exception in a connection's handler (bad_alloc, SSL_new failing)
// closes that connection only: before, it escaped io_context::run, which
// ended the loop's thread and so the daemon (here: the test program).
TEST(ExporterServer, AFaultInOneConnectionClosesItOnly) {
  Server server;
  std::promise<void> set;
  boost::asio::post(server.loop.io, [&] {
    server.exporter->set_fault_hook_for_tests([](std::string_view point) {
      static int accepts = 0;
      if (point == "accept" && ++accepts == 1) throw std::bad_alloc();
      if (point == "route") throw std::runtime_error("a fault while answering");
    });
    set.set_value();
  });
  set.get_future().wait();
  RawClient held(server.port(), "127.0.0.2");  // the first accept: it throws
  EXPECT_EQ(held.read_to_end(), "") << "closed at accept, without a reply";
  RawClient waiting(server.port(), "127.0.0.3");  // accepted; its request comes later
  RawClient faulty(server.port());
  faulty.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(faulty.read_to_end(), "") << "closed at the fault, without a reply";
  EXPECT_TRUE(waiting.still_waiting());
  // The loop and the acceptor go on: without the hook, scrapes are served.
  boost::asio::post(server.loop.io, [&] { server.exporter->set_fault_hook_for_tests(nullptr); });
  waiting.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(waiting.read_to_end().rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(http(server.port(), "GET", "/metrics").status, 200);
}

TEST(ExporterServer, MalformedRequestsGetA400AndHeadGetsHeadersOnly) {
  Server server;
  RawClient bad(server.port());
  bad.send("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(bad.read_to_end().rfind("HTTP/1.1 400", 0), 0u);
  const HttpResponse head = http(server.port(), "HEAD", "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_NE(head.headers.find("content-length: "), std::string::npos) << head.headers;
  EXPECT_EQ(http(server.port(), "GET", "/metrics?name[]=x").status, 200);
  EXPECT_EQ(http(server.port(), "TRACE", "/metrics").status, 405);
}

TEST(ExporterServer, ServesOverIpv6) {
  std::unique_ptr<Server> server;
  try {
    server = std::make_unique<Server>(nullptr, ExporterLimits{}, "[::1]:0");
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  const std::string out = curl("-g", "http://[::1]:" + std::to_string(server->port()) + "/metrics");
  EXPECT_EQ(status_of(out), "200") << out;
}

// --- TLS and basic auth ------------------------------------------------------

TEST(ExporterServer, TlsWithBasicAuthRightWrongAndMissing) {
  const TlsFiles tls;
  // Relative paths are relative to the web config's folder.
  const auto web = load_web_config(web_yml(tls,
                                           "tls_server_config:\n"
                                           "  cert_file: server.crt\n"
                                           "  key_file: server.key\n"
                                           "basic_auth_users:\n"
                                           "  prometheus: " +
                                               bcrypt_hash("s3cret") + "\n"));
  Server server(web);
  const std::string url = "https://localhost:" + std::to_string(server.port());
  const std::string ca = "--cacert " + tls.path("ca.crt");

  const std::string right = curl(ca + " -u prometheus:s3cret", url + "/metrics");
  EXPECT_EQ(status_of(right), "200") << right;
  EXPECT_NE(right.find("corenoise_paused 1"), std::string::npos) << right;
  // Twice: the second is answered from the cache of good passwords.
  EXPECT_EQ(status_of(curl(ca + " -u prometheus:s3cret", url + "/")), "200");
  for (const char* version : {"--tlsv1.2 --tls-max 1.2", "--tlsv1.3"}) {
    EXPECT_EQ(status_of(curl(ca + " -u prometheus:s3cret " + version, url + "/metrics")), "200")
        << version;
  }

  const std::string wrong = curl(ca + " -u prometheus:wrong -D -", url + "/metrics");
  EXPECT_EQ(status_of(wrong), "401") << wrong;
  EXPECT_NE(wrong.find("WWW-Authenticate: Basic realm=\"corenoised\""), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("corenoise_"), std::string::npos) << wrong;
  EXPECT_EQ(status_of(curl(ca + " -u nobody:s3cret", url + "/metrics")), "401");
  EXPECT_EQ(status_of(curl(ca, url + "/metrics")), "401");
  EXPECT_EQ(status_of(curl(ca + " -H 'Authorization: Bearer x'", url + "/metrics")), "401");
  // Routing after authentication, as before.
  EXPECT_EQ(status_of(curl(ca + " -u prometheus:s3cret", url + "/nope")), "404");
  EXPECT_EQ(status_of(curl(ca + " -u prometheus:s3cret -X POST", url + "/metrics")), "405");
  // A client that does not trust the CA gets no reply, nor does plain HTTP.
  EXPECT_EQ(status_of(curl("-u prometheus:s3cret", url + "/metrics")), "000");
  EXPECT_EQ(status_of(curl("", "http://127.0.0.1:" + std::to_string(server.port()) + "/")), "000");
}

TEST(ExporterServer, MinVersionTls13RefusesTls12) {
  const TlsFiles tls;
  Server server(load_web_config(web_yml(tls,
                                        "tls_server_config:\n"
                                        "  cert_file: server.crt\n"
                                        "  key_file: server.key\n"
                                        "  min_version: TLS13\n")));
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port()) + "/metrics";
  const std::string ca = "--cacert " + tls.path("ca.crt");
  EXPECT_EQ(status_of(curl(ca + " --tlsv1.2 --tls-max 1.2", url)), "000");
  EXPECT_EQ(status_of(curl(ca + " --tlsv1.3", url)), "200");
}

TEST(ExporterServer, RequireAndVerifyClientCertWantsACertificateFromTheCa) {
  const TlsFiles tls;
  Server server(load_web_config(web_yml(tls,
                                        "tls_server_config:\n"
                                        "  cert_file: server.crt\n"
                                        "  key_file: server.key\n"
                                        "  client_auth_type: RequireAndVerifyClientCert\n"
                                        "  client_ca_file: ca.crt\n")));
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port()) + "/metrics";
  const std::string ca = "--cacert " + tls.path("ca.crt");
  EXPECT_EQ(status_of(curl(ca, url)), "000");
  // The server's own certificate is from the CA but is not for clients.
  EXPECT_EQ(
      status_of(
          curl(ca + " --cert " + tls.path("client.crt") + " --key " + tls.path("client.key"), url)),
      "200");
}

TEST(ExporterServer, AReloadAppliesToNewConnections) {
  const TlsFiles tls;
  Server server;
  const std::string port = std::to_string(server.port());
  EXPECT_EQ(status_of(curl("", "http://127.0.0.1:" + port + "/")), "200");
  server.reload(load_web_config(web_yml(tls,
                                        "tls_server_config:\n"
                                        "  cert_file: server.crt\n"
                                        "  key_file: server.key\n")));
  EXPECT_EQ(status_of(curl("", "http://127.0.0.1:" + port + "/")), "000");
  EXPECT_EQ(status_of(curl("--cacert " + tls.path("ca.crt"), "https://127.0.0.1:" + port + "/")),
            "200");
  server.reload(nullptr);
  EXPECT_EQ(status_of(curl("", "http://127.0.0.1:" + port + "/")), "200");
}

// A flood of wrong passwords, each new, from one host holds off neither a
// client whose password passed nor another host's first check: one check
// per peer is in flight (its other requests get 429 at once) and the rest
// of a flood is closed at accept. Before: every one queued a bcrypt (~0.3 s
// at cost 12), and 20 of them pushed the new client past its deadline.
TEST(ExporterServer, AFloodOfWrongPasswordsFromOneHostHoldsOffNoOtherClient) {
  const std::string hash = bcrypt_hash("right", 12);  // ~0.2-0.5 s a check
  const auto web = std::make_shared<WebConfig>();
  web->auth = std::make_shared<const BasicAuth>(
      std::map<std::string, std::string>{{"p", hash}, {"q", bcrypt_hash("right", 12)}});
  ExporterLimits limits;
  limits.deadline = 4s;  // the new client's check must come within it
  // All 20 held at once from one host, so that only the one check in
  // flight per peer keeps them from queueing 20 checks (~6 s).
  limits.max_per_peer = 32;
  Server server(web, limits);
  const std::string good = "Authorization: Basic cDpyaWdodA==\r\n";  // p:right
  ASSERT_EQ(http(server.port(), "GET", "/metrics", good, "127.0.0.4").status, 200);
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 20; ++i) {
    flood.push_back(std::make_unique<RawClient>(server.port()));
    const std::string wrong = "p:wrong" + std::to_string(i);  // new each: no cache helps
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string encoded;
    for (std::size_t j = 0; j < wrong.size(); j += 3) {
      unsigned v = static_cast<unsigned char>(wrong[j]) << 16;
      if (j + 1 < wrong.size()) v |= static_cast<unsigned char>(wrong[j + 1]) << 8;
      if (j + 2 < wrong.size()) v |= static_cast<unsigned char>(wrong[j + 2]);
      encoded += kAlphabet[(v >> 18) & 63];
      encoded += kAlphabet[(v >> 12) & 63];
      encoded += j + 1 < wrong.size() ? kAlphabet[(v >> 6) & 63] : '=';
      encoded += j + 2 < wrong.size() ? kAlphabet[v & 63] : '=';
    }
    flood.back()->send("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + encoded +
                       "\r\n\r\n");
  }
  std::this_thread::sleep_for(50ms);  // let the server read them all
  // Known: from the cache at once.
  EXPECT_EQ(http(server.port(), "GET", "/metrics", good, "127.0.0.4").status, 200);
  // New, from another host: its first check waits behind one of the flood's.
  EXPECT_EQ(
      http(server.port(), "GET", "/metrics", "Authorization: Basic cTpyaWdodA==\r\n", "127.0.0.2")
          .status,
      200);  // q:right
  // Each of the flood: 401 (checked) or 429 (a check from there was in
  // flight).
  int answered_401 = 0, answered_429 = 0, closed = 0;
  for (auto& c : flood) {
    const std::string reply = c->read_to_end();
    answered_401 += reply.rfind("HTTP/1.1 401", 0) == 0 ? 1 : 0;
    answered_429 += reply.rfind("HTTP/1.1 429", 0) == 0 ? 1 : 0;
    closed += reply.empty() ? 1 : 0;
  }
  EXPECT_GE(answered_401, 1);
  EXPECT_LT(answered_401, 5) << "a check each, one at a time";
  EXPECT_EQ(answered_401 + answered_429 + closed, 20);
}

// Requests with the pair being checked wait for that one check rather than
// being told to come back: Prometheus and another client behind one address
// (a test beside a real Prometheus got a 429 so) are all served.
TEST(ExporterServer, RequestsWithThePairBeingCheckedShareTheCheck) {
  const auto web = std::make_shared<WebConfig>();
  web->auth = std::make_shared<const BasicAuth>(
      std::map<std::string, std::string>{{"p", bcrypt_hash("right", 12)}});
  ExporterLimits limits;
  limits.max_per_peer = 8;
  Server server(web, limits);
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic cDpyaWdodA==\r\n\r\n";
  auto first = std::make_unique<RawClient>(server.port());
  first->send(request);
  std::this_thread::sleep_for(20ms);  // its check is in flight
  std::vector<std::unique_ptr<RawClient>> same;
  for (int i = 0; i < 3; ++i) {
    same.push_back(std::make_unique<RawClient>(server.port()));
    same.back()->send(request);
  }
  // Another pair from there meanwhile is told to come back.
  RawClient other(server.port());
  other.send("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic cDpvdGhlcg==\r\n\r\n");
  EXPECT_EQ(other.read_to_end().rfind("HTTP/1.1 429", 0), 0u);
  EXPECT_EQ(first->read_to_end().rfind("HTTP/1.1 200", 0), 0u);
  for (auto& c : same) EXPECT_EQ(c->read_to_end().rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(web->auth->remembered("p", "right"), true);
}

// A wrong password that failed is refused at once when it comes again, even
// while another check from the same host is in flight (no 429, no bcrypt).
TEST(ExporterServer, ARepeatedWrongPasswordIsRefusedFromMemory) {
  const auto web = std::make_shared<WebConfig>();
  web->auth = std::make_shared<const BasicAuth>(
      std::map<std::string, std::string>{{"p", bcrypt_hash("right")}});
  Server server(web);
  const std::string wrong = "Authorization: Basic cDp3cm9uZw==\r\n";  // p:wrong
  EXPECT_EQ(http(server.port(), "GET", "/metrics", wrong).status, 401);
  EXPECT_EQ(web->auth->remembered("p", "wrong"), false);
  EXPECT_EQ(http(server.port(), "GET", "/metrics", wrong).status, 401);
}

// --- the web config file -----------------------------------------------------

std::string load_error(const TlsFiles& tls, const std::string& text) {
  try {
    load_web_config(web_yml(tls, text));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(WebConfig, ErrorsNameTheFileTheKeyAndWhatWasExpected) {
  const TlsFiles tls;
  const std::string file = tls.path("web.yml");
  const std::string tls_head = "tls_server_config:\n  cert_file: server.crt\n  key_file: ";
  const struct {
    std::string text;
    std::string expected;
  } cases[] = {
      {"tls_config:\n  cert_file: x\n", "unknown key 'tls_config'"},
      {tls_head + "server.key\n  cert: x\n", "unknown key 'tls_server_config.cert'"},
      {"http_server_config:\n  headers: {}\n", "unknown key 'http_server_config.headers'"},
      {"tls_server_config:\n  key_file: server.key\n", "tls_server_config.cert_file: missing"},
      {tls_head + "nope.key\n", "tls_server_config.key_file: cannot read " + tls.path("nope.key")},
      {tls_head + "client.key\n", "does not match the certificate"},
      {tls_head + "ca.crt\n", "is not a PEM private key"},
      {tls_head + "server.key\n  min_version: TLS11\n", "tls_server_config.min_version"},
      {tls_head + "server.key\n  client_auth_type: RequireAndVerifyClientCert\n",
       "tls_server_config.client_ca_file: missing"},
      {tls_head + "server.key\n  client_auth_type: Sometimes\n", "expected NoClientCert"},
      {"basic_auth_users:\n  prometheus: plaintext\n",
       "basic_auth_users.prometheus: expected a bcrypt hash"},
      {"basic_auth_users:\n  prometheus: $1$salt$hashhashhashhash\n", "expected a bcrypt hash"},
      {"basic_auth_users: [a, b]\n", "basic_auth_users: expected a mapping"},
      {"tls_server_config: [\n", "not YAML"},
  };
  for (const auto& c : cases) {
    const std::string message = load_error(tls, c.text);
    EXPECT_NE(message.find("web config " + file + ": "), std::string::npos) << c.text << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.text << " -> " << message;
  }
  EXPECT_NE(load_error(tls, "x").find("expected a mapping"), std::string::npos);
  try {
    load_web_config(tls.path("absent.yml"));
    ADD_FAILURE() << "a missing file loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("absent.yml: cannot read"), std::string::npos) << e.what();
  }
  // An empty file and http2 are fine: plain HTTP, no users.
  EXPECT_EQ(load_error(tls, ""), "");
  EXPECT_EQ(load_error(tls, "http_server_config:\n  http2: true\n"), "");
}

// As the exporter toolkit: an empty map of users is no authentication.
TEST(WebConfig, NoUsersMeansNoAuthentication) {
  const TlsFiles tls;
  EXPECT_EQ(load_web_config(web_yml(tls, "basic_auth_users: {}\n"))->auth, nullptr);
  EXPECT_EQ(load_web_config(web_yml(tls, "basic_auth_users:\n"))->auth, nullptr);
  EXPECT_NE(
      load_web_config(web_yml(tls, "basic_auth_users:\n  p: " + bcrypt_hash("x") + "\n"))->auth,
      nullptr);
}

// Refused before libcrypt is asked about the hash: checking it would cost a
// bcrypt at that cost (hours at 31), so this test ends at once or hangs.
TEST(WebConfig, BcryptCostsAbove14AreRefusedNamingTheUserAndTheCost) {
  const TlsFiles tls;
  std::string hash = bcrypt_hash("x");  // "$2b$04$..."
  for (const char* cost : {"15", "31"}) {
    hash.replace(4, 2, cost);
    const std::string message = load_error(tls, "basic_auth_users:\n  scraper: " + hash + "\n");
    EXPECT_NE(
        message.find("basic_auth_users.scraper: bcrypt cost " + std::string(cost) + " is above 14"),
        std::string::npos)
        << message;
  }
  hash.replace(4, 2, "05");  // a valid cost with this salt: still a hash libcrypt takes
  EXPECT_EQ(load_error(tls, "basic_auth_users:\n  scraper: " + hash + "\n"), "");
}

TEST(WebConfig, BasicAuthChecksAndRemembersPasswordsThatPassedAndFailed) {
  const BasicAuth auth({{"alice", bcrypt_hash("a")}, {"bob", bcrypt_hash("b")}});
  EXPECT_EQ(auth.remembered("alice", "a"), std::nullopt);
  EXPECT_TRUE(auth.verify("alice", "a"));
  EXPECT_EQ(auth.remembered("alice", "a"), true);
  EXPECT_EQ(auth.remembered("bob", "a"), std::nullopt);
  EXPECT_FALSE(auth.verify("alice", "b"));
  EXPECT_FALSE(auth.verify("alice", ""));
  EXPECT_FALSE(auth.verify("carol", "a"));
  // Failures are remembered too, so a repeated one costs no bcrypt.
  EXPECT_EQ(auth.remembered("alice", "b"), false);
  EXPECT_EQ(auth.remembered("carol", "a"), false);
  EXPECT_EQ(auth.remembered("alice", "a"), true);
  // $2y$ (htpasswd's) is the same algorithm.
  std::string y = bcrypt_hash("c");
  y[2] = 'y';
  EXPECT_TRUE(BasicAuth({{"carol", y}}).verify("carol", "c"));
}

TEST(WebConfig, ParsesBasicAuthorizationHeaders) {
  std::string user, password;
  ASSERT_TRUE(parse_basic_authorization("Basic cHJvbWV0aGV1czpzM2M6cmV0", user, password));
  EXPECT_EQ(user, "prometheus");
  EXPECT_EQ(password, "s3c:ret");  // a colon in the password stays
  ASSERT_TRUE(parse_basic_authorization("basic dTo=", user, password));
  EXPECT_EQ(user, "u");
  EXPECT_EQ(password, "");
  EXPECT_FALSE(parse_basic_authorization("Bearer cDpx", user, password));
  EXPECT_FALSE(parse_basic_authorization("Basic !!!!", user, password));
  EXPECT_FALSE(parse_basic_authorization("Basic bm9jb2xvbg==", user, password));  // "nocolon"
  EXPECT_FALSE(parse_basic_authorization("", user, password));
}

}  // namespace
}  // namespace corenoise

// The exporter's web configuration file (`web-config-file`, or
// --web.config.file): TLS and HTTP basic authentication in the format of
// the Prometheus exporter toolkit that node_exporter reads, so that a site
// can hand corenoised the file it already has for node_exporter:
//
//   tls_server_config:
//     cert_file: server.crt          # relative to this file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: clients-ca.crt
//     min_version: TLS13             # TLS12 (default) or TLS13
//     max_version: TLS13
//   http_server_config:
//     http2: false                   # accepted; corenoised serves HTTP/1.1
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hashes only, cost 14 at most
//
// `basic_auth_users: {}` (no users) means no authentication, as in the
// toolkit. A cost above 14 is refused at load (the toolkit takes any): one
// check at cost 31 would hold the bcrypt thread for days.
//
// Parsing is strict, as the toolkit's is: a key it does not know is an
// error naming the key and the file. Loading reads the certificate, the key
// and the CA file at once, so every start-up and reload error names the
// file and what was wrong; nothing is read again while serving.
//
// Threads: a WebConfig is immutable once loaded and may be shared across
// threads; BasicAuth is thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace corenoise {

// Checks user names and passwords against bcrypt hashes. A bcrypt check
// costs ~50-250 ms at cost 10 (the point of bcrypt), so the (user,
// password) pairs checked are remembered, keyed on a SHA-256 of the user,
// the hash and the password (the exporter toolkit does the same, for
// failures too): Prometheus's every-15-s scrape pays for one check per
// reload, and a client repeating a wrong password is refused at once.
class BasicAuth {
 public:
  // `users`: name -> bcrypt hash ($2a$, $2b$ or $2y$), already validated.
  explicit BasicAuth(std::map<std::string, std::string> users);

  bool empty() const { return users_.empty(); }

  // What verify() said of this pair lately: true if it passed, false if it
  // failed, nullopt if it is not remembered. Cheap (one SHA-256); call it
  // anywhere, the event loop included.
  std::optional<bool> remembered(std::string_view user, std::string_view password) const;

  // The full bcrypt check, slow: call it off the event loop. An unknown
  // user costs the same as a known one (a check against a dummy hash), so
  // that timing does not tell which user names exist. The comparison of
  // the hashes is constant-time.
  bool verify(std::string_view user, std::string_view password) const;

  // The pair's key in the memory above: equal keys, equal pairs. Cheap.
  std::string pair_key(std::string_view user, std::string_view password) const;

 private:
  std::map<std::string, std::string> users_;
  mutable std::mutex mutex_;
  // Bounded: a flood of distinct right passwords (there are few) cannot
  // grow it; when full it starts over.
  static constexpr std::size_t kMaxCached = 256;
  mutable std::unordered_set<std::string> good_;
  // Failed pairs, the oldest dropped first when full: a flood of distinct
  // wrong passwords only ages it, and costs a bcrypt each all the same.
  mutable std::unordered_set<std::string> bad_;
  mutable std::deque<std::string> bad_order_;
};

enum class ClientAuth {
  none,                // NoClientCert
  request,             // RequestClientCert: asked for, any or none accepted
  require_any,         // RequireAnyClientCert: one required, not verified
  verify_if_given,     // VerifyClientCertIfGiven
  require_and_verify,  // RequireAndVerifyClientCert
};

struct WebConfig {
  std::string path;  // the file it came from, for messages
  // Set when the file has tls_server_config: the certificate and key
  // loaded, client verification and protocol versions applied.
  std::shared_ptr<boost::asio::ssl::context> tls;
  ClientAuth client_auth = ClientAuth::none;
  std::shared_ptr<const BasicAuth> auth;  // null: no basic_auth_users, or none listed
};

// Reads and checks `path`. Throws std::runtime_error naming the file, the
// key and what was expected (an unknown key, a missing certificate, a key
// that does not match it, a hash that is not bcrypt or costs more than 14).
std::shared_ptr<const WebConfig> load_web_config(const std::string& path);

// The parts of an "Authorization: Basic ..." header value; false if it is
// not one (another scheme, bad base64, no colon).
bool parse_basic_authorization(std::string_view header, std::string& user, std::string& password);

}  // namespace corenoise

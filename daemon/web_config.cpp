#include "daemon/web_config.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <yaml-cpp/yaml.h>

#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace corenoise {
namespace {

namespace ssl = boost::asio::ssl;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("web config " + path + ": " + what);
}

// Keys a mapping may have; anything else is an error naming the key (the
// toolkit's YAML decoder is strict too, so a typo never silently drops TLS).
void only_keys(const YAML::Node& node, const std::string& path, const std::string& where,
               std::initializer_list<const char*> allowed) {
  if (!node.IsMap())
    fail(path, (where.empty() ? "the file" : where) + ": expected a mapping of keys");
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      fail(path, "unknown key '" + (where.empty() ? key : where + "." + key) + "' (expected " +
                     list + ")");
    }
  }
}

std::string scalar(const YAML::Node& node, const std::string& path, const std::string& key) {
  if (!node.IsScalar()) fail(path, key + ": expected a string");
  return node.as<std::string>();
}

// Relative paths are relative to the web config file's folder, as the
// exporter toolkit resolves them.
std::string resolve(const std::string& config_path, const std::string& file) {
  const std::filesystem::path p(file);
  if (p.is_absolute()) return file;
  return (std::filesystem::path(config_path).parent_path() / p).lexically_normal().string();
}

void readable(const std::string& config_path, const std::string& key, const std::string& file) {
  std::ifstream in(file);
  if (!in) fail(config_path, key + ": cannot read " + file + ": " + std::strerror(errno));
}

int tls_version(const std::string& path, const std::string& key, const std::string& value) {
  if (value == "TLS12") return TLS1_2_VERSION;
  if (value == "TLS13") return TLS1_3_VERSION;
  if (value == "TLS10" || value == "TLS11") {
    fail(path,
         key + ": got '" + value + "', which Debian's OpenSSL refuses; expected TLS12 or TLS13");
  }
  fail(path, key + ": got '" + value + "', expected TLS12 or TLS13");
}

ClientAuth client_auth(const std::string& path, const std::string& value) {
  if (value == "NoClientCert" || value.empty()) return ClientAuth::none;
  if (value == "RequestClientCert") return ClientAuth::request;
  if (value == "RequireAnyClientCert") return ClientAuth::require_any;
  if (value == "VerifyClientCertIfGiven") return ClientAuth::verify_if_given;
  if (value == "RequireAndVerifyClientCert") return ClientAuth::require_and_verify;
  fail(path, "tls_server_config.client_auth_type: got '" + value +
                 "', expected NoClientCert, RequestClientCert, RequireAnyClientCert, "
                 "VerifyClientCertIfGiven or RequireAndVerifyClientCert");
}

// OpenSSL's reason for the last failure, or `fallback`.
std::string ssl_reason(const boost::system::system_error& e) {
  return e.code().message().empty() ? e.what() : e.code().message();
}

const std::string kCertKey = "tls_server_config.cert_file";
const std::string kKeyKey = "tls_server_config.key_file";
const std::string kCaKey = "tls_server_config.client_ca_file";

// What tls_server_config says, checked: files resolved, versions ordered,
// a CA exactly where the client auth type verifies.
struct TlsSettings {
  std::string cert, key, ca;  // ca empty: none
  ClientAuth auth = ClientAuth::none;
  int min_version = TLS1_2_VERSION;
  int max_version = 0;  // 0: the highest OpenSSL has
};

TlsSettings tls_settings(const YAML::Node& tls, const std::string& path) {
  only_keys(tls, path, "tls_server_config",
            {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
             "max_version"});
  const auto get = [&](const char* key) {
    return tls[key] ? scalar(tls[key], path, std::string("tls_server_config.") + key)
                    : std::string();
  };
  if (get("cert_file").empty()) fail(path, kCertKey + ": missing; expected a PEM certificate file");
  if (get("key_file").empty()) fail(path, kKeyKey + ": missing; expected a PEM private key file");
  TlsSettings out;
  out.cert = resolve(path, get("cert_file"));
  out.key = resolve(path, get("key_file"));
  out.auth = client_auth(path, get("client_auth_type"));
  out.ca = get("client_ca_file").empty() ? "" : resolve(path, get("client_ca_file"));
  const bool verifies =
      out.auth == ClientAuth::verify_if_given || out.auth == ClientAuth::require_and_verify;
  if (verifies && out.ca.empty()) {
    fail(path, kCaKey + ": missing; expected the CA that signs the clients' certificates, which " +
                   get("client_auth_type") + " needs");
  }
  if (!verifies && !out.ca.empty()) {
    fail(path, kCaKey + ": set, but client_auth_type is " +
                   (get("client_auth_type").empty() ? "NoClientCert" : get("client_auth_type")) +
                   "; expected VerifyClientCertIfGiven or RequireAndVerifyClientCert with it");
  }
  if (tls["min_version"]) {
    out.min_version = tls_version(path, "tls_server_config.min_version", get("min_version"));
  }
  if (tls["max_version"]) {
    out.max_version = tls_version(path, "tls_server_config.max_version", get("max_version"));
  }
  if (out.max_version != 0 && out.max_version < out.min_version) {
    fail(path, "tls_server_config.max_version: lower than min_version");
  }
  return out;
}

// The server's certificate and key, and the clients' CA if any.
void load_files(ssl::context& context, const TlsSettings& tls, const std::string& path) {
  readable(path, kCertKey, tls.cert);
  readable(path, kKeyKey, tls.key);
  try {
    context.use_certificate_chain_file(tls.cert);
  } catch (const boost::system::system_error& e) {
    fail(path, kCertKey + ": " + tls.cert + " is not a PEM certificate (" + ssl_reason(e) + ")");
  }
  try {
    context.use_private_key_file(tls.key, ssl::context::pem);
  } catch (const boost::system::system_error& e) {
    const std::string reason = ssl_reason(e);
    if (reason.find("mismatch") != std::string::npos) {
      fail(path, kKeyKey + ": " + tls.key + " does not match the certificate " + tls.cert);
    }
    fail(path, kKeyKey + ": " + tls.key + " is not a PEM private key (" + reason + ")");
  }
  if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
    fail(path, kKeyKey + ": " + tls.key + " does not match the certificate " + tls.cert);
  }
  if (tls.ca.empty()) return;
  readable(path, kCaKey, tls.ca);
  try {
    context.load_verify_file(tls.ca);
  } catch (const boost::system::system_error& e) {
    fail(path, kCaKey + ": " + tls.ca + " holds no PEM certificate (" + ssl_reason(e) + ")");
  }
}

// Whether and how the server asks for the client's certificate.
void verify_clients(ssl::context& context, ClientAuth auth) {
  switch (auth) {
    case ClientAuth::none:
      context.set_verify_mode(ssl::verify_none);
      break;
    case ClientAuth::request:
    case ClientAuth::require_any:
      // Any certificate will do: these types ask for one without checking it.
      context.set_verify_mode(
          ssl::verify_peer |
          (auth == ClientAuth::require_any ? ssl::verify_fail_if_no_peer_cert : 0));
      context.set_verify_callback([](bool, ssl::verify_context&) { return true; });
      break;
    case ClientAuth::verify_if_given:
      context.set_verify_mode(ssl::verify_peer);
      break;
    case ClientAuth::require_and_verify:
      context.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      break;
  }
}

std::shared_ptr<ssl::context> tls_context(const YAML::Node& node, const std::string& path,
                                          ClientAuth& auth_type) {
  const TlsSettings tls = tls_settings(node, path);
  auth_type = tls.auth;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(context->native_handle(), tls.min_version);
  SSL_CTX_set_max_proto_version(context->native_handle(), tls.max_version);
  load_files(*context, tls, path);
  // Needed once peers are verified, or OpenSSL refuses resumed sessions.
  static const unsigned char kSessionContext[] = "corenoised";
  SSL_CTX_set_session_id_context(context->native_handle(), kSessionContext,
                                 sizeof kSessionContext - 1);
  verify_clients(*context, tls.auth);
  return context;
}

// The highest bcrypt cost a hash may have. Each check of a password not
// seen before costs 2^cost rounds: ~0.3 s at 12 and ~1-2 s at 14 on a
// current core, doubling per step, so a cost-31 hash would hold the bcrypt
// thread (and every new client behind it) for days.
constexpr int kMaxBcryptCost = 14;

bool bcrypt_shaped(const std::string& hash) {
  if (hash.size() != 60) return false;
  return hash.rfind("$2a$", 0) == 0 || hash.rfind("$2b$", 0) == 0 || hash.rfind("$2y$", 0) == 0;
}

// The cost of a bcrypt-shaped hash ("$2y$NN$..."), or -1 if NN is not two digits.
int bcrypt_cost(const std::string& hash) {
  const char tens = hash[4], ones = hash[5];
  if (hash[6] != '$' || tens < '0' || tens > '9' || ones < '0' || ones > '9') return -1;
  return (tens - '0') * 10 + (ones - '0');
}

// A bcrypt-shaped hash whose cost is at most kMaxBcryptCost (checked first:
// checking the hash itself costs a bcrypt at that cost).
bool is_bcrypt(const std::string& hash) {
  if (!bcrypt_shaped(hash)) return false;
  // Let libcrypt itself say whether it can use it (cost range, alphabet).
  crypt_data data{};
  const char* out = crypt_rn("", hash.c_str(), &data, sizeof data);
  return out != nullptr && out[0] != '*';
}

std::map<std::string, std::string> users(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) fail(path, "basic_auth_users: expected a mapping of user name to bcrypt hash");
  std::map<std::string, std::string> out;
  for (const auto& item : node) {
    const std::string user = item.first.as<std::string>();
    const std::string key = "basic_auth_users." + user;
    if (user.empty() || user.find(':') != std::string::npos) {
      fail(path, key + ": a user name must be non-empty and have no ':'");
    }
    const std::string hash = scalar(item.second, path, key);
    if (bcrypt_shaped(hash) && bcrypt_cost(hash) > kMaxBcryptCost) {
      fail(path, key + ": bcrypt cost " + std::to_string(bcrypt_cost(hash)) + " is above " +
                     std::to_string(kMaxBcryptCost) +
                     ", the most corenoised accepts (each check of a new password would hold "
                     "every other one off for seconds or more); expected a hash from e.g. "
                     "`htpasswd -nBC 10 USER`");
    }
    if (!is_bcrypt(hash)) {
      fail(path, key +
                     ": expected a bcrypt hash ($2y$..., 60 characters, e.g. from "
                     "`htpasswd -nBC 10 USER`), got " +
                     (hash.size() > 8 ? "'" + hash.substr(0, 8) + "...'" : "'" + hash + "'"));
    }
    out[user] = hash;
  }
  return out;
}

std::string base64_decode(std::string_view in, bool& ok) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned bits = 0;
  int count = 0;
  ok = true;
  std::size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const std::size_t v = kAlphabet.find(in[i]);
    if (v == std::string_view::npos) {
      ok = false;
      return {};
    }
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  for (; i < in.size(); ++i) ok = ok && in[i] == '=';
  return out;
}

}  // namespace

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

std::string BasicAuth::pair_key(std::string_view user, std::string_view password) const {
  const auto it = users_.find(std::string(user));
  std::string material(user);
  material += ':';
  material += it == users_.end() ? "" : it->second;
  material += ':';
  material += password;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_Digest(material.data(), material.size(), digest, &length, EVP_sha256(), nullptr);
  OPENSSL_cleanse(material.data(), material.size());
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::optional<bool> BasicAuth::remembered(std::string_view user, std::string_view password) const {
  const std::string key = pair_key(user, password);
  std::lock_guard lock(mutex_);
  if (good_.contains(key)) return true;
  if (bad_.contains(key)) return false;
  return std::nullopt;
}

bool BasicAuth::verify(std::string_view user, std::string_view password) const {
  if (users_.empty()) return false;
  const auto it = users_.find(std::string(user));
  // An unknown user is checked against some user's hash all the same.
  const std::string& hash = it != users_.end() ? it->second : users_.begin()->second;
  const std::string pass(password);  // crypt wants it NUL-terminated
  crypt_data data{};
  const char* out = crypt_rn(pass.c_str(), hash.c_str(), &data, sizeof data);
  const bool same = out != nullptr && std::strlen(out) == hash.size() &&
                    CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(&data, sizeof data);
  const bool good = same && it != users_.end();
  const std::string key = pair_key(user, password);
  std::lock_guard lock(mutex_);
  if (good) {
    if (good_.size() >= kMaxCached) good_.clear();
    good_.insert(key);
  } else if (bad_.insert(key).second) {
    bad_order_.push_back(key);
    if (bad_order_.size() > kMaxCached) {
      bad_.erase(bad_order_.front());
      bad_order_.pop_front();
    }
  }
  return good;
}

std::shared_ptr<const WebConfig> load_web_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, std::string("cannot read the file: ") + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    fail(path, "not YAML: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  auto config = std::make_shared<WebConfig>();
  config->path = path;
  if (root.IsNull()) return config;  // an empty file: plain HTTP, no users
  try {
    only_keys(root, path, "", {"tls_server_config", "http_server_config", "basic_auth_users"});
    if (root["tls_server_config"] && !root["tls_server_config"].IsNull()) {
      config->tls = tls_context(root["tls_server_config"], path, config->client_auth);
    }
    if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
      only_keys(http, path, "http_server_config", {"http2"});
      // HTTP/2 needs ALPN and a second protocol; Prometheus scrapes over
      // HTTP/1.1 either way, so `http2: true` is accepted and served as 1.1.
      if (http["http2"]) scalar(http["http2"], path, "http_server_config.http2");
    }
    if (root["basic_auth_users"] && !root["basic_auth_users"].IsNull()) {
      auto found = users(root["basic_auth_users"], path);
      // No users means no authentication, as the exporter toolkit has it
      // (`len(c.Users) == 0` serves everyone): `basic_auth_users: {}` is
      // the same as leaving the key out.
      if (!found.empty()) config->auth = std::make_shared<const BasicAuth>(std::move(found));
    }
  } catch (const YAML::Exception& e) {
    fail(path, "line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return config;
}

bool parse_basic_authorization(std::string_view header, std::string& user, std::string& password) {
  const std::size_t space = header.find(' ');
  if (space == std::string_view::npos) return false;
  std::string scheme(header.substr(0, space));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "basic") return false;
  std::string_view encoded = header.substr(space + 1);
  while (!encoded.empty() && encoded.front() == ' ') encoded.remove_prefix(1);
  bool ok = false;
  const std::string decoded = base64_decode(encoded, ok);
  const std::size_t colon = decoded.find(':');
  if (!ok || colon == std::string::npos) return false;
  user = decoded.substr(0, colon);
  password = decoded.substr(colon + 1);
  return true;
}

}  // namespace corenoise

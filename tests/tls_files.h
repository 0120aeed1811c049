// What a site's TLS and basic auth need, made for a test in a folder of its
// own: a throwaway CA, a server certificate for 127.0.0.1, ::1 and
// localhost (subjectAltName) and a client certificate, all from the
// `openssl` command (package openssl), and bcrypt hashes from libcrypt.
// No network. Link PkgConfig::LIBXCRYPT (crypt_rn).
#pragma once

#include <crypt.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace corenoise::testing {

// The bcrypt ($2b$) hash of `password`, as `htpasswd -nBC COST` makes it.
// Cost 4 is bcrypt's least and takes ~1 ms, for tests that check many.
inline std::string bcrypt_hash(const std::string& password, unsigned long cost = 4) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt, sizeof salt) == nullptr) {
    throw std::runtime_error("crypt_gensalt_rn failed");
  }
  crypt_data data{};
  const char* hash = crypt_rn(password.c_str(), salt, &data, sizeof data);
  if (hash == nullptr || hash[0] == '*') throw std::runtime_error("crypt_rn failed");
  return hash;
}

class TlsFiles {
 public:
  // ca.crt, server.crt, server.key, client.crt, client.key in a new folder.
  TlsFiles() {
    char name[] = "/tmp/corenoise-tls-XXXXXX";
    if (mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = name;
    std::ofstream(dir_ + "/server.ext") << "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n"
                                           "extendedKeyUsage=serverAuth\n";
    std::ofstream(dir_ + "/client.ext") << "extendedKeyUsage=clientAuth\n";
    const std::string q = " 2>>'" + dir_ + "/openssl.log'";
    run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=corenoise test CA'"
        " -keyout ca.key -out ca.crt" +
        q);
    for (const char* who : {"server", "client"}) {
      const std::string w = who;
      run("openssl req -newkey rsa:2048 -nodes -subj '/CN=" + w + "' -keyout " + w + ".key -out " +
          w + ".csr" + q);
      run("openssl x509 -req -days 2 -in " + w + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial" +
          " -extfile " + w + ".ext -out " + w + ".crt" + q);
    }
  }
  ~TlsFiles() { std::filesystem::remove_all(dir_); }
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // Writes `text` to `name` in the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

 private:
  void run(const std::string& command) const {
    const std::string line = "cd '" + dir_ + "' && " + command;
    if (std::system(line.c_str()) != 0) {
      throw std::runtime_error("failed (is the openssl package installed?): " + line);
    }
  }
  std::string dir_;
};

}  // namespace corenoise::testing

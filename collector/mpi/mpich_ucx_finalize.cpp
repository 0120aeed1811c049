// See mpich_ucx_finalize.h for the deadlock and why skipping the flush is safe.
#include "collector/mpi/mpich_ucx_finalize.h"

#include <dlfcn.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <string_view>

namespace corenoise {
namespace {

std::atomic<bool> g_unflushed_disconnect{false};

// The rest of the line after `key`.
std::string_view line_after(std::string_view text, std::string_view key) {
  const auto at = text.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = text.substr(at + key.size());
  return rest.substr(0, rest.find('\n'));
}

// The major.minor version after `key` ("MPICH Version:\t4.0.2").
bool version_after(std::string_view text, std::string_view key, int& major, int& minor) {
  std::string_view rest = line_after(text, key);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  const char* end = rest.data() + rest.size();
  auto [after_major, major_error] = std::from_chars(rest.data(), end, major);
  if (major_error != std::errc() || after_major == end || *after_major != '.') return false;
  auto [after_minor, minor_error] = std::from_chars(after_major + 1, end, minor);
  return minor_error == std::errc();
}

}  // namespace

bool mpi_finalize_needs_unflushed_disconnect(std::string_view library_version) {
  int major = 0;
  int minor = 0;
  if (!version_after(library_version, "MPICH Version:", major, minor)) return false;
  // The device line, not the configure line that may name UCX too.
  if (line_after(library_version, "MPICH Device:").find("ch4:ucx") == std::string_view::npos) {
    return false;
  }
  return major < 4 || (major == 4 && minor < 2);
}

void set_unflushed_ucx_disconnect(bool armed) {
  g_unflushed_disconnect.store(armed, std::memory_order_release);
}

}  // namespace corenoise

// Defined in the MPICH plugin, which comes before libucp in the search order
// of the libraries loaded with it, and in the MPICH in-job library, which is
// preloaded: libmpich binds to this one.
extern "C" [[gnu::visibility("default")]] void* ucp_disconnect_nb(void* ep) {
  if (corenoise::g_unflushed_disconnect.load(std::memory_order_acquire)) {
    return nullptr;  // UCS_OK: done; ucp_worker_destroy releases the endpoint
  }
  // UCX's own, from libucp itself: RTLD_NEXT would depend on where the
  // dynamic linker happened to put this plugin and libucp in its lists.
  using Disconnect = void* (*)(void*);
  static const auto ucx_disconnect = [] {
    void* ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
    return reinterpret_cast<Disconnect>(ucp != nullptr ? dlsym(ucp, "ucp_disconnect_nb")
                                                       : dlsym(RTLD_NEXT, "ucp_disconnect_nb"));
  }();
  // UCS_ERR_UNSUPPORTED (-22) as a status pointer, should libucp lack it.
  if (ucx_disconnect == nullptr) return reinterpret_cast<void*>(static_cast<intptr_t>(-22));
  return ucx_disconnect(ep);
}

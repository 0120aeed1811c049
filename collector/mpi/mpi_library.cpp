#include "collector/mpi/mpi_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace corenoise {
namespace {

// The plugins' entry points (library_environment.cpp). A plugin built for
// another MpiEnvironment (its hash of mpi_environment.h differs) is refused
// rather than called wrongly.
constexpr const char* kEntryPoint = "corenoise_mpi_environment_open";
constexpr const char* kInterfacePoint = "corenoise_mpi_plugin_interface";
using OpenFunction = MpiEnvironment* (*)(int*, char***);
using InterfaceFunction = const char* (*)();

std::string plugin_file(MpiFamily family) {
  return "libcorenoise-mpi-" + std::string(family_name(family)) + ".so";
}

std::vector<std::filesystem::path> plugin_directories() {
  if (const char* dir = std::getenv("CORENOISE_MPI_PLUGIN_DIR"); dir != nullptr && *dir != '\0') {
    return {dir};
  }
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  const auto dir = exe.parent_path();
  return {dir / CORENOISE_PLUGIN_RELATIVE_DIR, dir};
}

// What to install when the family's libmpi is what failed to load.
std::string remedy(MpiFamily family) {
  return family == MpiFamily::mpich ? "install MPICH's library (apt-get install libmpich12)"
                                    : "install Open MPI's library (apt-get install libopenmpi3)";
}

// The MPICH plugin is linked against no MPI (collector/CMakeLists.txt):
// any MPICH-ABI library serves, and is loaded first, into the global scope,
// for the plugin's MPI symbols to bind to. In order: the file
// $CORENOISE_MPI_LIBRARY names; libmpi.so.12, the soname of Intel MPI,
// MVAPICH and Cray MPICH, found where the site's environment (a `module
// load`'s LD_LIBRARY_PATH) puts it; Debian's libmpich.so.12. Empty when
// one loaded, else why none did.
std::string load_mpich_abi_library() {
  std::vector<std::string> candidates;
  if (const char* file = std::getenv("CORENOISE_MPI_LIBRARY"); file != nullptr && *file != '\0') {
    candidates = {file};
  } else {
    candidates = {"libmpi.so.12", "libmpich.so.12"};
  }
  std::string why;
  for (const std::string& name : candidates) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle != nullptr && dlsym(handle, "PMPI_Init") != nullptr) return "";
    why += (why.empty() ? "" : "; ") +
           (handle == nullptr ? std::string(dlerror()) : name + " defines no PMPI_Init");
  }
  return "no MPICH-ABI library loads (" + why +
         "): load the site's MPI (module load ...), set CORENOISE_MPI_LIBRARY to its "
         "libmpi.so.12, or " +
         remedy(MpiFamily::mpich);
}

struct Loaded {
  OpenFunction open = nullptr;
  std::string error;  // why not, when open is null
  bool built = true;  // false: no plugin file for the family at all
};

// dlopen's the family's plugin; it stays loaded for the process's life
// (MPI libraries are not made to be unloaded).
Loaded load_plugin(MpiFamily family) {
  std::string tried;
  if (const auto found = find_family_library(plugin_file(family), &tried)) {
    const std::filesystem::path& path = *found;
    // RTLD_GLOBAL: Open MPI's own components, dlopen'd by libmpi, expect
    // libmpi's symbols in the global scope. The MPICH plugin is linked
    // against no MPI and loaded lazily, before the MPICH-ABI library its
    // MPI calls then bind to: ahead of that library's libucp in the search
    // order, so that its ucp_disconnect_nb displaces UCX's
    // (mpich_ucx_finalize.cpp).
    const bool mpich = family == MpiFamily::mpich;
    void* handle = dlopen(path.c_str(), (mpich ? RTLD_LAZY : RTLD_NOW) | RTLD_GLOBAL);
    if (handle == nullptr) return {nullptr, std::string(dlerror()) + "; " + remedy(family)};
    if (mpich) {
      if (std::string why = load_mpich_abi_library(); !why.empty()) return {nullptr, why};
    }
    auto* interface = reinterpret_cast<InterfaceFunction>(dlsym(handle, kInterfacePoint));
    auto* open = reinterpret_cast<OpenFunction>(dlsym(handle, kEntryPoint));
    if (interface == nullptr || open == nullptr ||
        std::string_view(interface()) != CORENOISE_MPI_INTERFACE) {
      return {nullptr, path.string() + " is a plugin of another corenoise build (interface " +
                           (interface != nullptr ? interface() : "unknown") + ", this one's " +
                           CORENOISE_MPI_INTERFACE + ")"};
    }
    return {open, ""};
  }
  return {nullptr,
          "this corenoise was built without " + family_title(family) + " (no " +
              plugin_file(family) + " in " + tried + "); rebuild it with " +
              std::string(family_name(family)) + " in CORENOISE_MPI_FAMILIES (docs/operations.md)",
          false};
}

}  // namespace

std::string family_title(MpiFamily family) {
  return family == MpiFamily::mpich ? "MPICH" : "Open MPI";
}

std::optional<std::filesystem::path> find_family_library(const std::string& file,
                                                         std::string* tried) {
  for (const auto& dir : plugin_directories()) {
    const auto path = (dir / file).lexically_normal();
    std::error_code error;
    if (std::filesystem::exists(path, error)) return path;
    if (tried != nullptr) *tried += (tried->empty() ? "" : ", ") + path.parent_path().string();
  }
  return std::nullopt;
}

std::unique_ptr<MpiEnvironment> open_mpi_environment(const Launch& launch, int* argc,
                                                     char*** argv) {
  std::vector<MpiFamily> candidates;
  if (launch.family) {
    candidates = {*launch.family};
  } else {
    candidates = {MpiFamily::mpich, MpiFamily::openmpi};
  }
  std::string failures;
  for (const MpiFamily family : candidates) {
    const Loaded plugin = load_plugin(family);
    if (plugin.open == nullptr) {
      failures += (failures.empty() ? "" : "; ") + family_title(family) + ": " + plugin.error;
      continue;
    }
    std::unique_ptr<MpiEnvironment> env(plugin.open(argc, argv));
    if (launch.ranks > 0 && env->world_size() != launch.ranks) {
      throw MpiLaunchMismatch(
          "the launcher started " + std::to_string(launch.ranks) + " ranks (" + launch.evidence +
          "), but " + env->library_version() + " sees a job of " +
          std::to_string(env->world_size()) +
          ": the launcher and the MPI library disagree. Launch with the family's own "
          "launcher (mpiexec.mpich, mpirun.openmpi, srun --mpi=pmi2 or --mpi=pmix), "
          "or unset CORENOISE_MPI");
    }
    return env;
  }
  if (launch.family) {
    throw MpiError("launched by " + family_title(*launch.family) + " (" + launch.evidence +
                   "), but its plugin cannot be loaded: " + failures);
  }
  throw MpiError("no MPI library can be loaded: " + failures);
}

std::unique_ptr<MpiEnvironment> open_mpi_environment(int* argc, char*** argv) {
  Launch launch;
  try {
    launch = detect_launch();
  } catch (const std::invalid_argument& e) {
    throw MpiError(e.what());
  }
  return open_mpi_environment(launch, argc, argv);
}

}  // namespace corenoise

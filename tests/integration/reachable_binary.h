// A program that a test runs as another user (nobody, the daemon's user)
// must be where that user can reach it: a checkout in /root (mode 0700, as
// a user who clones into their home gets) is not. This hands out the
// program's own path where every folder above it lets others through and
// the file lets them execute it, else a copy, made once per test process,
// in a folder of its own under /tmp that everyone may read.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace corenoise::testing {

inline constexpr std::filesystem::perms kEveryoneMayRun =
    std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
    std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
    std::filesystem::perms::others_exec;

// True if a user who is neither the owner nor in the group may execute
// `path`: the file has o+x and every folder above it o+x.
inline bool others_may_execute(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
  for (std::filesystem::path dir = std::filesystem::absolute(path).parent_path();;
       dir = dir.parent_path()) {
    if (::stat(dir.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
    if (dir == dir.root_path()) return true;
  }
}

// `binary`, or a copy of it that every user may execute.
inline std::string reachable_by_everyone(const std::string& binary) {
  if (others_may_execute(binary)) return binary;
  static std::mutex mutex;
  static std::map<std::string, std::string> copies;
  std::lock_guard lock(mutex);
  if (const auto it = copies.find(binary); it != copies.end()) return it->second;
  // Removed when the test process exits.
  struct Folder {
    Folder() {
      char name[] = "/tmp/corenoise-bin-XXXXXX";
      const char* made = ::mkdtemp(name);
      path = made != nullptr ? made : "";
      if (!path.empty()) std::filesystem::permissions(path, kEveryoneMayRun);
    }
    ~Folder() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
    std::string path;
  };
  static const Folder folder;
  const std::string copy = folder.path + "/" + std::filesystem::path(binary).filename().string();
  std::filesystem::copy_file(binary, copy, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::permissions(copy, kEveryoneMayRun);
  copies[binary] = copy;
  return copy;
}

}  // namespace corenoise::testing

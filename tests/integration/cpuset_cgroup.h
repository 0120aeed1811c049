// A cpuset cgroup of a test's own, made the way a batch system or
// `systemd-run -p AllowedCPUs=` confines a service: cgroup v1's cpuset
// hierarchy where it is mounted (/sys/fs/cgroup/cpuset), else cgroup v2
// with the cpuset controller enabled at the root. Processes moved in are
// moved back to the parent, and the group removed, at the end. Needs root.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace corenoise::testing {

class CpusetCgroup {
 public:
  explicit CpusetCgroup(const std::string& name) {
    const std::string v1 = "/sys/fs/cgroup/cpuset", v2 = "/sys/fs/cgroup";
    if (std::filesystem::exists(v1 + "/cpuset.cpus")) {
      parent_ = v1;
    } else if (read(v2 + "/cgroup.controllers").find("cpuset") != std::string::npos) {
      parent_ = v2;
      // v2 hands a controller to children only through subtree_control.
      if (!write(v2 + "/cgroup.subtree_control", "+cpuset")) return;
    } else {
      error_ = "no cpuset controller: neither " + v1 + " (cgroup v1) nor cpuset in " + v2 +
               "/cgroup.controllers (cgroup v2)";
      return;
    }
    dir_ = parent_ + "/" + name;
    if (::mkdir(dir_.c_str(), 0755) != 0) {
      error_ = "mkdir " + dir_ + ": " + std::strerror(errno);
      dir_.clear();
      return;
    }
    // v1 starts a group with no CPUs and no memory nodes: give it its
    // parent's. (v2 starts it with the parent's effective sets.)
    all_cpus_ = trim(read(parent_ + "/cpuset.cpus.effective"));
    if (all_cpus_.empty()) all_cpus_ = trim(read(parent_ + "/cpuset.effective_cpus"));
    const std::string mems = trim(read(parent_ + "/cpuset.mems"));
    if (!mems.empty() && !write(dir_ + "/cpuset.mems", mems)) return;
    set_cpus(all_cpus_);
  }
  ~CpusetCgroup() {
    if (dir_.empty()) return;
    std::istringstream procs(read(dir_ + "/cgroup.procs"));
    for (std::string pid; procs >> pid;) write(parent_ + "/cgroup.procs", pid);
    ::rmdir(dir_.c_str());
  }
  CpusetCgroup(const CpusetCgroup&) = delete;
  CpusetCgroup& operator=(const CpusetCgroup&) = delete;

  // Empty when the group is usable; otherwise why not (also after a failed
  // call below).
  const std::string& error() const { return error_; }
  // The CPUs the group started with: its parent's.
  const std::string& all_cpus() const { return all_cpus_; }
  // Every thread of the process.
  bool add(pid_t pid) { return write(dir_ + "/cgroup.procs", std::to_string(pid)); }
  // The kernel applies it to every thread in the group at once.
  bool set_cpus(const std::string& list) { return write(dir_ + "/cpuset.cpus", list); }

 private:
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  // One write(2), as the cgroup files take a value per call.
  bool write(const std::string& path, const std::string& value) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    const bool ok =
        fd >= 0 && ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
    if (!ok) error_ = "write '" + value + "' to " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return ok;
  }

  std::string parent_;
  std::string dir_;
  std::string all_cpus_;
  std::string error_;
};

}  // namespace corenoise::testing

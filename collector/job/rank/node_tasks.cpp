#include "collector/job/rank/node_tasks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "collector/job/rank/proc_parse.h"
#include "probe/proc_text.h"

namespace corenoise {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool all_digits(const std::string& name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<TaskTime> scan_tasks(const std::string& proc_root) {
  std::vector<TaskTime> tasks;
  std::error_code error;
  for (const auto& process : std::filesystem::directory_iterator(proc_root, error)) {
    const std::string pid = process.path().filename().string();
    if (!all_digits(pid)) continue;
    std::error_code task_error;
    for (const auto& task :
         std::filesystem::directory_iterator(process.path() / "task", task_error)) {
      const std::string tid = task.path().filename().string();
      if (!all_digits(tid)) continue;
      // Tasks come and go while we read: a missing file is a task gone.
      const std::string stat_text = read_file(task.path() / "stat");
      const std::string sched_text = read_file(task.path() / "schedstat");
      const auto stat = parse_task_stat(stat_text);
      const auto sched = parse_schedstat(sched_text);
      if (!stat || !sched) continue;
      tasks.push_back({std::stol(pid), std::stol(tid), std::string(stat->comm), sched->run_ns,
                       stat->processor});
    }
  }
  // The process's command is its main thread's comm (threads may rename
  // themselves: "python3" runs threads named "ThreadPoolExec").
  std::map<long, std::string> commands;
  for (const TaskTime& t : tasks) {
    if (t.pid == t.tid) commands[t.pid] = t.command;
  }
  for (TaskTime& t : tasks) {
    if (auto it = commands.find(t.pid); it != commands.end()) t.command = it->second;
  }
  return tasks;
}

std::vector<CpuCulprit> culprits_between(std::span<const TaskTime> before,
                                         std::span<const TaskTime> after,
                                         std::span<const long> excluded_pids, int per_cpu,
                                         double min_seconds) {
  std::map<long, std::uint64_t> earlier;  // tid -> run_ns (tids are unique at a time)
  std::map<long, long> earlier_pid;
  for (const TaskTime& t : before) {
    earlier[t.tid] = t.run_ns;
    earlier_pid[t.tid] = t.pid;
  }
  // (cpu, pid) -> seconds, command
  std::map<std::pair<int, long>, std::pair<double, std::string>> by_process;
  for (const TaskTime& t : after) {
    if (t.cpu < 0) continue;
    if (std::find(excluded_pids.begin(), excluded_pids.end(), t.pid) != excluded_pids.end())
      continue;
    std::uint64_t base = 0;
    // A tid reused by another process since the first scan is a new task.
    if (auto it = earlier.find(t.tid); it != earlier.end() && earlier_pid[t.tid] == t.pid) {
      base = std::min(it->second, t.run_ns);
    }
    auto& entry = by_process[{t.cpu, t.pid}];
    entry.first += static_cast<double>(t.run_ns - base) * 1e-9;
    entry.second = t.command;
  }
  std::vector<CpuCulprit> all;
  for (const auto& [key, value] : by_process) {
    if (value.first >= min_seconds)
      all.push_back({key.first, key.second, value.second, value.first});
  }
  std::sort(all.begin(), all.end(), [](const CpuCulprit& a, const CpuCulprit& b) {
    return std::tie(a.cpu, b.seconds) < std::tie(b.cpu, a.seconds);
  });
  std::vector<CpuCulprit> kept;
  int cpu = -2, count = 0;
  for (const CpuCulprit& c : all) {
    if (c.cpu != cpu) {
      cpu = c.cpu;
      count = 0;
    }
    if (count++ < per_cpu) kept.push_back(c);
  }
  return kept;
}

}  // namespace corenoise

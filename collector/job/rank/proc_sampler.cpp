#include "collector/job/rank/proc_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "probe/proc_text.h"

namespace corenoise {
namespace {

// The whole file at `fd` from offset 0 into `buffer`; its length, or 0.
std::size_t read_at_start(int fd, char* buffer, std::size_t size) {
  if (fd < 0) return 0;
  std::size_t length = 0;
  while (length < size) {
    const ssize_t n = ::pread(fd, buffer + length, size - length, static_cast<off_t>(length));
    if (n <= 0) break;
    length += static_cast<std::size_t>(n);
  }
  return length;
}

int open_read(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }

struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

}  // namespace

ProcSampler::ProcSampler(std::string proc_root, std::vector<unsigned> cpus, int main_tid)
    : proc_root_(std::move(proc_root)), cpus_(std::move(cpus)), main_tid_(main_tid) {
  const long hz = ::sysconf(_SC_CLK_TCK);
  ticks_per_second_ = hz > 0 ? static_cast<double>(hz) : 100.0;
  tasks_.resize(kMaxThreads);
  // Two descriptors per thread, from the program's own allowance: at most
  // a quarter of its soft limit (1,024 on many systems gives 128 threads).
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    max_threads_ =
        std::clamp<std::size_t>(static_cast<std::size_t>(limit.rlim_cur) / 8, 8, kMaxThreads);
  }
  departed_.reserve(kMaxThreads);
  task_dir_fd_ = ::open((proc_root_ + "/self/task").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  proc_stat_fd_ = open_read(proc_root_ + "/stat");
  main_status_fd_ = open_read(proc_root_ + "/self/task/" + std::to_string(main_tid_) + "/status");
  // /proc/stat grows with the CPU count (and its intr line with the
  // interrupt lines): size the buffer once, with room to spare.
  buffer_.resize(1 << 16);
  while (proc_stat_fd_ >= 0) {
    const std::size_t length = read_at_start(proc_stat_fd_, buffer_.data(), buffer_.size());
    if (length < buffer_.size() || buffer_.size() >= (std::size_t{1} << 24)) break;
    buffer_.resize(buffer_.size() * 4);
  }
  buffer_.resize(buffer_.size() * 2);
  sample();  // the baseline
  // What the threads ran before the baseline is not the job's: the
  // baseline's window is discarded, and threads() must count from here too
  // (the first sample took each thread's whole run time since its start).
  for (Task& task : tasks_) task.seconds_on_rank_cpus = 0;
}

ProcSampler::~ProcSampler() {
  for (Task& task : tasks_) close_task(task);
  for (int fd : {task_dir_fd_, proc_stat_fd_, main_status_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

bool ProcSampler::on_rank_cpu(int processor) const {
  return processor >= 0 &&
         std::find(cpus_.begin(), cpus_.end(), static_cast<unsigned>(processor)) != cpus_.end();
}

void ProcSampler::open_task(Task& task, int tid) {
  // On a thread's birth, inside a call: a stack buffer, no allocation.
  char name[48];
  task.tid = tid;
  std::snprintf(name, sizeof(name), "%d/stat", tid);
  task.stat_fd = ::openat(task_dir_fd_, name, O_RDONLY | O_CLOEXEC);
  std::snprintf(name, sizeof(name), "%d/schedstat", tid);
  task.schedstat_fd = ::openat(task_dir_fd_, name, O_RDONLY | O_CLOEXEC);
  task.last = {};
  task.seconds_on_rank_cpus = 0;
  task.comm.fill('\0');
}

void ProcSampler::close_task(Task& task) {
  if (task.tid != 0) --open_tasks_;
  if (task.stat_fd >= 0) ::close(task.stat_fd);
  if (task.schedstat_fd >= 0) ::close(task.schedstat_fd);
  task = Task{};
}

void ProcSampler::list_tasks() {
  for (Task& task : tasks_) task.seen = false;
  if (task_dir_fd_ < 0) return;
  ::lseek(task_dir_fd_, 0, SEEK_SET);
  for (;;) {
    const long n = ::syscall(SYS_getdents64, task_dir_fd_, dents_.data(), dents_.size());
    if (n <= 0) break;
    for (long offset = 0; offset < n;) {
      const auto* entry = reinterpret_cast<const LinuxDirent64*>(dents_.data() + offset);
      offset += entry->d_reclen;
      const auto tid = proc_text::to_number(entry->d_name);
      if (!tid) continue;  // "." and ".."
      Task* free_slot = nullptr;
      bool known = false;
      for (Task& task : tasks_) {
        if (task.tid == static_cast<int>(*tid)) {
          task.seen = known = true;
          break;
        }
        if (task.tid == 0 && free_slot == nullptr) free_slot = &task;
      }
      // A thread born since the last listing; past max_threads_ threads the
      // rest go unseen (their time still shows as the CPUs' busy time).
      if (!known && free_slot != nullptr && open_tasks_ < max_threads_) {
        open_task(*free_slot, static_cast<int>(*tid));
        free_slot->seen = true;
        ++open_tasks_;
      }
    }
  }
  for (Task& task : tasks_) {
    if (task.tid == 0 || task.seen) continue;
    // It exited: keep what it took from the rank's CPUs for the report.
    if (task.seconds_on_rank_cpus > 0 && departed_.size() < departed_.capacity()) {
      departed_.push_back(task);
      departed_.back().stat_fd = departed_.back().schedstat_fd = -1;
    }
    close_task(task);
  }
}

double ProcSampler::seconds_since_last_sample() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const std::uint64_t now_ns = static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
                               static_cast<std::uint64_t>(now.tv_nsec);
  // The baseline's window is each thread's whole life: not a window.
  const double seconds =
      last_sample_ns_ != 0 ? static_cast<double>(now_ns - last_sample_ns_) * 1e-9 : 0;
  last_sample_ns_ = now_ns;
  return seconds;
}

void ProcSampler::sample_task(Task& task, double window_seconds, ProcWindow& window, int& busy) {
  std::size_t length = read_at_start(task.schedstat_fd, small_.data(), small_.size());
  const auto sched = parse_schedstat(std::string_view(small_.data(), length));
  length = read_at_start(task.stat_fd, small_.data(), small_.size());
  const auto stat = parse_task_stat(std::string_view(small_.data(), length));
  if (!sched || !stat) return;
  if (task.comm[0] == '\0') {
    const std::size_t n = std::min(stat->comm.size(), task.comm.size() - 1);
    std::memcpy(task.comm.data(), stat->comm.data(), n);
  }
  const double ran =
      static_cast<double>(sched->run_ns - std::min(sched->run_ns, task.last.run_ns)) * 1e-9;
  if (window_seconds > 0 && ran >= kBusyShare * window_seconds) ++busy;
  if (task.tid == main_tid_) {
    window.main_run_queue_seconds +=
        static_cast<double>(sched->wait_ns - std::min(sched->wait_ns, task.last.wait_ns)) * 1e-9;
    // The main thread's own faults: they are what its on-CPU time is
    // charged with (attribution.h), not those of the other threads.
    window.minor_faults = stat->minor_faults - std::min(stat->minor_faults, last_minor_);
    window.major_faults = stat->major_faults - std::min(stat->major_faults, last_major_);
    last_minor_ = stat->minor_faults;
    last_major_ = stat->major_faults;
  }
  if (on_rank_cpu(stat->processor)) {
    window.own_process_seconds += ran;
    if (task.tid != main_tid_) {
      window.own_threads_seconds += ran;
      task.seconds_on_rank_cpus += ran;
    }
  }
  task.last = *sched;
}

void ProcSampler::sample_cpus(ProcWindow& window) {
  const std::size_t length = read_at_start(proc_stat_fd_, buffer_.data(), buffer_.size());
  if (length == 0) return;
  const CpuTicks ticks = parse_cpu_ticks(std::string_view(buffer_.data(), length), cpus_);
  if (ticks.cpus_found == 0) return;
  if (cpu_ticks_known_) {
    const auto delta = [this](std::uint64_t now, std::uint64_t then) {
      return static_cast<double>(now - std::min(now, then)) / ticks_per_second_;
    };
    window.cpu_busy_seconds = delta(ticks.busy, last_ticks_.busy);
    window.interrupt_seconds = delta(ticks.interrupts, last_ticks_.interrupts);
    window.steal_seconds = delta(ticks.steal, last_ticks_.steal);
  }
  last_ticks_ = ticks;
  cpu_ticks_known_ = true;
}

void ProcSampler::sample_switches(ProcWindow& window) {
  const std::size_t length = read_at_start(main_status_fd_, buffer_.data(), buffer_.size());
  if (length == 0) return;
  if (const auto switches = parse_status_counter(std::string_view(buffer_.data(), length),
                                                 "nonvoluntary_ctxt_switches")) {
    window.involuntary_switches = *switches - std::min(*switches, last_switches_);
    last_switches_ = *switches;
  }
}

ProcWindow ProcSampler::sample() {
  ProcWindow window;
  const double window_seconds = seconds_since_last_sample();
  int busy = 0;
  list_tasks();
  for (Task& task : tasks_) {
    if (task.tid != 0) sample_task(task, window_seconds, window, busy);
  }
  peak_busy_threads_ = std::max(peak_busy_threads_, busy);
  sample_cpus(window);
  sample_switches(window);
  return window;
}

std::vector<OwnThread> ProcSampler::threads() const {
  std::vector<OwnThread> threads;
  for (const std::vector<Task>* list : {&tasks_, &departed_}) {
    for (const Task& task : *list) {
      if (task.tid == 0 || task.tid == main_tid_) continue;
      threads.push_back({task.tid, std::string(task.comm.data()), task.seconds_on_rank_cpus});
    }
  }
  std::sort(threads.begin(), threads.end(), [](const OwnThread& a, const OwnThread& b) {
    return a.seconds_on_rank_cpus > b.seconds_on_rank_cpus;
  });
  return threads;
}

}  // namespace corenoise

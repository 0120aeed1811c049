// The tracefs backend of TraceSource, through rtla's libraries: libtracefs
// owns the instance and reads its ring buffers, libtraceevent decodes the
// records by the kernel's own format files.
//
// An instance of our own (instances/corenoise-PID-START-N), never the top-level
// buffer: rtla, trace-cmd or perf running beside us keep theirs. Its clock
// is x86-tsc (the records' timestamps are the probe's own TSC ticks), and
// it records only the probed CPUs while they are measured: in an isolated
// round the probe thread sets the cpumask to its CPU and writes tracing_on
// just before its window and after it; a concurrent round is recorded whole
// (TraceSource::round_begins). The ranks of `sweep --rank-per-core` attach
// to their leader's instance (attach mode), one CPU each. An instance a
// crashed run left behind (its PID gone) is removed when the next one
// opens.
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>
// libtracefs 1.6's header is C's alone: no extern "C", and its inline
// functions pass an int where they take an enum (valid C, an error in C++
// that -fpermissive, this file only, probe/CMakeLists.txt, makes a warning).
extern "C" {
#include <tracefs.h>
}

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "probe/trace/tracefs_source.h"
#include "probe/tsc.h"

namespace corenoise::trace {
namespace {

constexpr const char* kInstancePrefix = "corenoise-";
constexpr const char* kTracefsPath = "/sys/kernel/tracing";

// The events that say who had the CPU (trace_events.h); irq_vectors is
// x86's, and its absence elsewhere is no loss of anything else.
struct Wanted {
  const char* system;
  const char* event;
  bool required;
};
constexpr Wanted kWanted[] = {
    {"sched", "sched_switch", true},
    {"irq", "irq_handler_entry", true},
    {"irq", "irq_handler_exit", true},
    {"irq", "softirq_entry", true},
    {"irq", "softirq_exit", true},
    {"workqueue", "workqueue_execute_start", false},
    {"workqueue", "workqueue_execute_end", false},
    {"irq_vectors", nullptr, false},  // every system vector's entry and exit
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// tracefs mounted where libtracefs looks for it, mounting it if need be
// (as root; systemd mounts it at boot on most machines, and it stays).
std::string mounted_tracefs() {
  if (access((std::string(kTracefsPath) + "/trace").c_str(), F_OK) == 0) return kTracefsPath;
  if (mount("nodev", kTracefsPath, "tracefs", 0, nullptr) != 0)
    throw std::runtime_error(std::string("tracefs is not mounted and cannot be mounted on ") +
                             kTracefsPath + ": " + std::strerror(errno));
  return kTracefsPath;
}

// When process `pid` started, in clock ticks since boot (/proc/PID/stat's
// 22nd field): the same whatever PID namespace reads it, and with the pid,
// one process's alone. 0 where there is no such process.
unsigned long long start_ticks(long long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const std::size_t after_command = stat.rfind(')');  // a command may hold spaces
  if (after_command == std::string::npos) return 0;
  std::istringstream fields(stat.substr(after_command + 2));
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  unsigned long long ticks = 0;
  fields >> ticks;
  return ticks;
}

// An instance's name: corenoise-PID-START-K, its process's pid and start
// (start_ticks) and a count. The start tells a process of our PID
// namespace from another namespace's of the same pid (containers number
// their processes alike), whose instance may have outlived it.
std::string instance_name_for(pid_t pid, unsigned count) {
  return kInstancePrefix + std::to_string(pid) + "-" + std::to_string(start_ticks(pid)) + "-" +
         std::to_string(count);
}

// Instances of runs whose process is gone. (rmdir is how an instance is
// removed; the kernel refuses, EBUSY, one whose files a live run -- of
// another PID namespace, say -- holds open.) An older name without the
// start (corenoise-PID-K) is judged by its pid alone.
void remove_stale_instances(const std::string& tracing_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(tracing_dir + "/instances", ec)) {
    const std::string name = entry.path().filename();
    if (name.rfind(kInstancePrefix, 0) != 0) continue;
    std::vector<long long> parts;
    std::istringstream fields(name.substr(std::strlen(kInstancePrefix)));
    for (std::string part; std::getline(fields, part, '-');) {
      if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) break;
      parts.push_back(std::atoll(part.c_str()));
    }
    if (parts.empty()) continue;
    const long long pid = parts[0];
    bool alive = pid > 0 && pid <= std::numeric_limits<pid_t>::max() &&
                 (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (alive && parts.size() >= 3) {
      // Unreadable (hidepid, another's): alive, as far as we can tell.
      const unsigned long long started = start_ticks(pid);
      alive = started == 0 || started == static_cast<unsigned long long>(parts[1]);
    }
    if (alive) continue;
    rmdir(entry.path().c_str());
  }
}

template <typename Cpus>
std::string cpu_list_text(const Cpus& cpus) {
  std::string text;
  for (unsigned cpu : cpus) text += (text.empty() ? "" : ",") + std::to_string(cpu);
  return text;
}

// The kernel's text symbols, to name a work item by its function: read
// once, when the source opens (122,000 lines here, ~20 ms), so that no
// round pays for it.
class Symbols {
 public:
  void load() {
    std::ifstream in("/proc/kallsyms");
    std::string line;
    while (std::getline(in, line)) {
      // "ffffffff815d6150 t refresh_vm_stats\t[module]"
      const std::size_t type_at = line.find(' ');
      if (type_at == std::string::npos || type_at + 3 > line.size()) continue;
      const char type = line[type_at + 1];
      if (type != 't' && type != 'T') continue;
      const std::uint64_t address = std::strtoull(line.c_str(), nullptr, 16);
      if (address == 0) continue;  // kptr_restrict hides them all
      const std::size_t name_at = type_at + 3;
      symbols_.emplace_back(address,
                            line.substr(name_at, line.find_first_of("\t ", name_at) - name_at));
    }
    std::sort(symbols_.begin(), symbols_.end());
  }

  std::string name_of(std::uint64_t address) const {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                               [](std::uint64_t a, const auto& s) { return a < s.first; });
    if (it == symbols_.begin() || address == 0) return hex(address);
    return std::prev(it)->second;
  }

 private:
  static std::string hex(std::uint64_t address) {
    std::ostringstream out;
    out << "0x" << std::hex << address;
    return out.str();
  }
  std::vector<std::pair<std::uint64_t, std::string>> symbols_;
};

// A command killed by SIGINT, SIGTERM or SIGHUP (Ctrl-C, a batch system's
// kill) would leave its instance behind, tracing on if a window was open.
// Where the process left those signals at their default, the handler turns
// tracing off, closes our file and removes the instance -- write, close
// and rmdir are async-signal-safe -- and then dies of the signal as it
// would have. Programs with handlers of their own (corenoised, through
// Asio) release the source themselves. One instance a process: the last
// opened, with the files of the sources attached to it (a sweep leader's
// own rank). An attached rank's handler only switches recording off and
// lets go of its file: the instance is its leader's to remove (the
// leader's rmdir fails while a rank still holds a file of it, and the next
// traced run removes what is left).
namespace on_signal {
constexpr int kFiles = 4;
std::atomic<int> tracing_on_fds[kFiles] = {-1, -1, -1, -1};
char instance_dir[PATH_MAX];

void clean_up_and_die(int signal_number) {
  bool held = false;
  for (auto& slot : tracing_on_fds) {
    const int fd = slot.exchange(-1);
    if (fd < 0) continue;
    (void)!write(fd, "0", 1);
    close(fd);
    held = true;
  }
  if (held && instance_dir[0] != '\0') rmdir(instance_dir);
  ::signal(signal_number, SIG_DFL);
  raise(signal_number);
}

// `dir`: the instance to remove, "" for an attached source's file.
void arm(int fd, const char* dir) {
  if (std::strlen(dir) >= sizeof instance_dir) return;
  if (dir[0] != '\0') std::strcpy(instance_dir, dir);
  for (auto& slot : tracing_on_fds) {
    int expected = -1;
    if (slot.compare_exchange_strong(expected, fd)) break;
  }
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_handler = clean_up_and_die;
    sigemptyset(&ours.sa_mask);
    sigaction(signal_number, &ours, nullptr);
  }
}

void disarm(int fd) {
  if (fd < 0) return;
  for (auto& slot : tracing_on_fds) {
    int expected = fd;
    slot.compare_exchange_strong(expected, -1);
  }
}
}  // namespace on_signal

// The libraries' own warnings (an event system this kernel lacks) would go
// to our stderr; what matters comes back as an error of ours.
void quiet_libraries() {
  tracefs_set_loglevel(TEP_LOG_NONE);
  tep_set_loglevel(TEP_LOG_NONE);
}

// The instance's tracing_on, kept open for the cheap writes around windows.
int open_tracing_on(tracefs_instance* instance) {
  const int fd = tracefs_trace_on_get_fd(instance);
  if (fd < 0) throw std::runtime_error("cannot open the instance's tracing_on");
  fcntl(fd, F_SETFD, FD_CLOEXEC);  // not for the programs we start
  return fd;
}

// The events' formats, as this kernel prints them.
tep_handle* local_event_formats() {
  static const char* const systems[] = {"sched", "irq", "irq_vectors", "workqueue", nullptr};
  tep_handle* tep = tracefs_local_events_system(nullptr, systems);
  if (tep == nullptr) throw std::runtime_error("cannot read the kernel's event formats");
  return tep;
}

class TracefsSource final : public TraceSource {
 public:
  // The owner: a new instance recording `cpus`.
  TracefsSource(std::span<const unsigned> cpus, unsigned buffer_kib) : owner_(true) {
    quiet_libraries();
    remove_stale_instances(mounted_tracefs());
    // PID and a count: a daemon reopening its source (a reload) while an
    // abandoned round still holds the old one gets a new instance.
    static std::atomic<unsigned> opened{0};
    const std::string name = instance_name_for(getpid(), opened++);
    instance_ = tracefs_instance_create(name.c_str());
    if (instance_ == nullptr)
      throw std::runtime_error("cannot create the tracefs instance '" + name +
                               "': " + std::strerror(errno));
    if (!tracefs_instance_is_new(instance_)) {
      // Someone else's (another PID namespace's run of the same PID): not ours to use.
      tracefs_instance_free(instance_);
      instance_ = nullptr;
      throw std::runtime_error("the tracefs instance '" + name + "' exists already");
    }
    try {
      configure(cpus, buffer_kib);
    } catch (...) {
      destroy();
      throw;
    }
    for (unsigned cpu : cpus) cpus_[cpu].marks.reserve(kMarksReserved);
    symbols_.load();
    if (char* dir = tracefs_instance_get_dir(instance_)) {
      on_signal::arm(tracing_on_, dir);
      tracefs_put_tracing_file(dir);
    }
  }

  // Attached to another process's instance `name`, for `cpu` alone: it
  // marks and reads that CPU, switches recording for its own windows, and
  // leaves the instance to its owner.
  TracefsSource(const std::string& name, unsigned cpu) : owner_(false) {
    quiet_libraries();
    if (name.rfind(kInstancePrefix, 0) != 0 || !tracefs_instance_exists(name.c_str()))
      throw std::runtime_error("no tracefs instance '" + name + "' to attach to");
    instance_ = tracefs_instance_alloc(nullptr, name.c_str());
    if (instance_ == nullptr)
      throw std::runtime_error("cannot attach to the tracefs instance '" + name +
                               "': " + std::strerror(errno));
    try {
      tep_ = local_event_formats();
      tracing_on_ = open_tracing_on(instance_);
    } catch (...) {
      destroy();
      throw;
    }
    cpus_[cpu].marks.reserve(kMarksReserved);
    symbols_.load();
    on_signal::arm(tracing_on_, "");
  }

  ~TracefsSource() override { destroy(); }

  // Records `cpu` alone while one window runs (isolated rounds); in a
  // round recorded whole, only marks.
  std::uint64_t window_begins(unsigned cpu) noexcept override {
    std::lock_guard lock(mutex_);
    auto it = cpus_.find(cpu);
    if (it == cpus_.end() || instance_ == nullptr) return read_tsc();
    CpuState& state = it->second;
    if (!state.open) {
      state.open = true;
      state.switched = !whole_round_;
      if (state.switched) {
        traced_.insert(cpu);
        tracefs_instance_set_affinity(instance_, cpu_list_text(traced_).c_str());
        if (windows_open_++ == 0) tracefs_trace_on_fd(tracing_on_);
      }
    }
    return mark(state, EventKind::tracing_on);
  }

  // The CPUs of a window that switched itself on (a thread of an earlier
  // round, abandoned inside it) stay in the mask throughout.
  void round_begins(std::span<const unsigned> cpus) noexcept override {
    std::lock_guard lock(mutex_);
    whole_round_ = true;
    if (!owner_ || instance_ == nullptr) return;
    std::set<unsigned> recorded = traced_;
    recorded.insert(cpus.begin(), cpus.end());
    tracefs_instance_set_affinity(instance_, cpu_list_text(recorded).c_str());
    tracefs_trace_on_fd(tracing_on_);
  }

  void round_ends() noexcept override {
    std::lock_guard lock(mutex_);
    whole_round_ = false;
    if (!owner_ || instance_ == nullptr) return;
    if (windows_open_ == 0) {
      tracefs_trace_off_fd(tracing_on_);
    } else {
      tracefs_instance_set_affinity(instance_, cpu_list_text(traced_).c_str());
    }
  }

  std::string instance_name() const override {
    const char* name = instance_ != nullptr ? tracefs_instance_get_name(instance_) : nullptr;
    return name != nullptr ? name : "";
  }

  void window_ends(unsigned cpu) noexcept override {
    std::lock_guard lock(mutex_);
    auto it = cpus_.find(cpu);
    if (it == cpus_.end() || !it->second.open) return;
    mark(it->second, EventKind::tracing_off);
    close_window(cpu, it->second);
  }

  void window_abandoned(unsigned cpu) noexcept override {
    std::lock_guard lock(mutex_);
    auto it = cpus_.find(cpu);
    if (it != cpus_.end() && it->second.open) close_window(cpu, it->second);
  }

  void release() noexcept override {
    std::lock_guard lock(mutex_);
    destroy();
  }

  std::vector<Event> take(unsigned cpu) override {
    std::vector<Event> events;
    auto it = cpus_.find(cpu);
    if (it == cpus_.end())
      throw std::runtime_error("CPU " + std::to_string(cpu) + " is not traced");
    if (instance_ == nullptr) throw std::runtime_error("the trace was released");
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    Reading reading{this, &events};
    const int read = tracefs_iterate_raw_events(tep_, instance_, &set, sizeof set,
                                                &TracefsSource::on_record, &reading);
    if (read < 0 || reading.failed)
      throw std::runtime_error("cannot read CPU " + std::to_string(cpu) + "'s trace");
    // Events the kernel could not store (the buffer was full) and never
    // told a record about: a gap from the last record on.
    const std::uint64_t dropped = dropped_events(cpu);
    CpuState& state = it->second;
    if (dropped > state.dropped && !reading.lost_seen) {
      events.push_back(
          {reading.last_time,
           EventKind::lost,
           0,
           0,
           static_cast<int>(std::min<std::uint64_t>(dropped - state.dropped, INT32_MAX)),
           {},
           0});
    }
    state.dropped = dropped;
    {
      std::lock_guard lock(mutex_);
      events.insert(events.end(), state.marks.begin(), state.marks.end());
      state.marks.clear();
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.time < b.time; });
    return events;
  }

 private:
  // A CPU's windows: whether one is open, its marks, and what the kernel
  // reported dropped so far.
  struct CpuState {
    bool open = false;
    bool switched = false;  // its open window switched recording on
    std::vector<Event> marks;
    std::uint64_t dropped = 0;
  };
  // Two marks a window: a round's windows without a reallocation under the lock.
  static constexpr std::size_t kMarksReserved = 256;

  struct Reading {
    TracefsSource* self;
    std::vector<Event>* events;
    std::uint64_t last_time = 0;  // the last record read
    bool lost_seen = false;
    bool failed = false;
  };

  void configure(std::span<const unsigned> cpus, unsigned buffer_kib) {
    if (tracefs_instance_file_write(instance_, "trace_clock", "x86-tsc") < 0)
      throw std::runtime_error("the kernel has no x86-tsc trace clock to match the probe's TSC");
    tracefs_trace_off(instance_);
    // A full buffer drops the newest events, which the next record or the
    // CPU's stats then report: overwriting would lose the oldest silently.
    tracefs_option_disable(instance_, TRACEFS_OPTION_OVERWRITE);
    tracefs_instance_file_write(instance_, "buffer_size_kb", std::to_string(buffer_kib).c_str());
    const std::string list = cpu_list_text(cpus);
    if (tracefs_instance_set_affinity(instance_, list.c_str()) < 0)
      throw std::runtime_error("cannot limit tracing to CPUs " + list);
    tep_ = local_event_formats();
    for (const Wanted& w : kWanted) {
      if (tracefs_event_enable(instance_, w.system, w.event) < 0 && w.required)
        throw std::runtime_error(std::string("the kernel has no ") + w.system + ":" + w.event +
                                 " event");
    }
    tracing_on_ = open_tracing_on(instance_);
  }

  // Under mutex_.
  void close_window(unsigned cpu, CpuState& state) noexcept {
    state.open = false;
    if (!state.switched) return;
    state.switched = false;
    traced_.erase(cpu);
    if (--windows_open_ == 0 && !whole_round_ && tracing_on_ >= 0)
      tracefs_trace_off_fd(tracing_on_);
  }

  // The kernel's count of events it could not store on `cpu`.
  std::uint64_t dropped_events(unsigned cpu) {
    char* text = tracefs_instance_file_read(
        instance_, ("per_cpu/cpu" + std::to_string(cpu) + "/stats").c_str(), nullptr);
    if (text == nullptr) return 0;
    std::uint64_t dropped = 0;
    if (const char* at = std::strstr(text, "dropped events: "))
      dropped = std::strtoull(at + std::strlen("dropped events: "), nullptr, 10);
    std::free(text);
    return dropped;
  }

  void destroy() noexcept {
    on_signal::disarm(tracing_on_);
    if (tracing_on_ >= 0) {
      // An attached source let go of mid-window (its rank's round failed)
      // leaves no recording on behind it.
      if (!owner_ && windows_open_ > 0) tracefs_trace_off_fd(tracing_on_);
      close(tracing_on_);
    }
    tracing_on_ = -1;
    if (tep_ != nullptr) tep_free(tep_);
    tep_ = nullptr;
    if (instance_ != nullptr) {
      if (owner_) tracefs_instance_destroy(instance_);
      tracefs_instance_free(instance_);
    }
    instance_ = nullptr;
  }

  std::uint64_t mark(CpuState& state, EventKind kind) noexcept {
    const std::uint64_t now = read_tsc();
    try {
      state.marks.push_back({now, kind, 0, 0, 0, {}, 0});
    } catch (...) {
      // Out of memory before a window: the window is then matched as if
      // traced throughout, which the events' own order still bounds.
    }
    return now;
  }

  static long long number(tep_event* event, tep_record* record, const char* field) {
    unsigned long long value = 0;
    tep_get_field_val(nullptr, event, field, record, &value, 0);
    return static_cast<long long>(value);
  }

  static std::string text(tep_event* event, tep_record* record, const char* field) {
    int length = 0;
    const auto* raw =
        static_cast<const char*>(tep_get_field_raw(nullptr, event, field, record, &length, 0));
    if (raw == nullptr || length <= 0) return {};
    return std::string(raw, strnlen(raw, static_cast<std::size_t>(length)));
  }

  // Called by libtracefs for each record: nothing may throw through its C
  // frames (its buffers and file descriptors would leak, and an open
  // trace_pipe_raw keeps the instance from being removed).
  static int on_record(tep_event* event, tep_record* record, int, void* context) noexcept {
    auto& reading = *static_cast<Reading*>(context);
    try {
      reading.self->add(event, record, reading);
      return 0;
    } catch (...) {
      reading.failed = true;
      return 1;  // stops the iteration
    }
  }

  void add(tep_event* event, tep_record* record, Reading& reading) {
    std::vector<Event>& events = *reading.events;
    if (record->missed_events != 0) {
      // Dropped between the last record read and this one: the gap starts there.
      const long long missed = record->missed_events;
      events.push_back({reading.last_time,
                        EventKind::lost,
                        0,
                        0,
                        missed > 0 ? static_cast<int>(std::min<long long>(missed, INT32_MAX)) : 0,
                        {},
                        0});
      reading.lost_seen = true;
    }
    reading.last_time = record->ts;
    const std::string system = event->system, name = event->name;
    Event e{record->ts, EventKind::lost, 0, 0, 0, {}, 0};
    if (name == "sched_switch") {
      e.kind = EventKind::task_switch;
      e.prev_pid = static_cast<int>(number(event, record, "prev_pid"));
      e.pid = static_cast<int>(number(event, record, "next_pid"));
      e.prio = static_cast<int>(number(event, record, "next_prio"));
      e.name = text(event, record, "next_comm");
    } else if (name == "irq_handler_entry") {
      e.kind = EventKind::irq_entry;
      e.number = static_cast<int>(number(event, record, "irq"));
      e.name = text(event, record, "name");
    } else if (name == "irq_handler_exit") {
      e.kind = EventKind::irq_exit;
      e.number = static_cast<int>(number(event, record, "irq"));
    } else if (name == "softirq_entry" || name == "softirq_exit") {
      e.kind = name == "softirq_entry" ? EventKind::softirq_entry : EventKind::softirq_exit;
      e.number = static_cast<int>(number(event, record, "vec"));
    } else if (name == "workqueue_execute_start") {
      e.kind = EventKind::work_start;
      e.name = symbols_.name_of(static_cast<std::uint64_t>(number(event, record, "function")));
    } else if (name == "workqueue_execute_end") {
      e.kind = EventKind::work_end;
    } else if (system == "irq_vectors" && ends_with(name, "_entry")) {
      e.kind = EventKind::irq_entry;
      e.number = -1;
      e.name = name.substr(0, name.size() - 6);
    } else if (system == "irq_vectors" && ends_with(name, "_exit")) {
      e.kind = EventKind::irq_exit;
      e.number = -1;
    } else {
      return;
    }
    events.push_back(std::move(e));
  }

  const bool owner_;  // created the instance, and removes it
  tracefs_instance* instance_ = nullptr;
  tep_handle* tep_ = nullptr;
  int tracing_on_ = -1;
  std::mutex mutex_;
  int windows_open_ = 0;               // windows that switched recording on, still open
  bool whole_round_ = false;           // between round_begins and round_ends
  std::set<unsigned> traced_;          // their CPUs: the cpumask, outside a round recorded whole
  std::map<unsigned, CpuState> cpus_;  // keys fixed at construction
  Symbols symbols_;
};

}  // namespace

std::unique_ptr<TraceSource> open_tracefs_source(std::span<const unsigned> cpus,
                                                 unsigned buffer_kib) {
  return std::make_unique<TracefsSource>(cpus, buffer_kib);
}

std::unique_ptr<TraceSource> attach_tracefs_source(const std::string& instance, unsigned cpu) {
  return std::make_unique<TracefsSource>(instance, cpu);
}

}  // namespace corenoise::trace

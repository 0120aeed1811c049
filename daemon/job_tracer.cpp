#include "daemon/job_tracer.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "probe/tsc.h"

namespace corenoise {
namespace {

constexpr const char* kAnotherUsersTask = "another user's task";

// One ledger entry: a task by its command (a shell loop's dd is a new
// process each pass, and each would take an entry of its own), anything
// else by its number and name.
bool same(const trace::Culprit& a, const trace::Culprit& b) {
  if (a.kind != b.kind || a.name != b.name) return false;
  return a.kind == trace::CulpritKind::task || a.id == b.id;
}

}  // namespace

JobTracer::JobTracer(std::unique_ptr<trace::TraceSource> source, OwnerLookup owner_of, bool hidden,
                     double read_every_seconds, bool foreign_pids)
    : source_(std::move(source)),
      owner_of_(std::move(owner_of)),
      hidden_(hidden),
      read_every_seconds_(read_every_seconds),
      foreign_pids_(foreign_pids) {
  source_->round_ends();  // nothing recorded until a job is followed
  thread_ = std::thread([this] { run(); });
}

JobTracer::~JobTracer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  source_->release();
}

void JobTracer::run() {
  const auto period = std::chrono::duration<double>(read_every_seconds_);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, period, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    try {
      read_now();
    } catch (...) {
      // Out of memory in a read: the next one tries again.
    }
    lock.lock();
  }
}

std::size_t JobTracer::follow(const std::vector<TracedJob>& jobs) {
  // A rank's own /proc entry, unreadable: its threads cannot be told from
  // others' (a daemon that sees only its own user's processes).
  std::size_t blind = 0;
  for (const TracedJob& j : jobs) {
    for (pid_t pid : j.pids) blind += owner_of_(pid) ? 0 : 1;
  }
  std::lock_guard lock(mutex_);
  const std::uint64_t now = read_tsc();
  std::map<Key, const TracedJob*> listed;
  for (const TracedJob& j : jobs) listed[{j.uid, j.job_id}] = &j;
  std::erase_if(jobs_, [&](const auto& entry) { return !listed.contains(entry.first); });
  for (const auto& [key, ranks] : listed) take_job(*ranks, now, false);
  record(now);
  return blind;
}

void JobTracer::watch(const TracedJob& rank) {
  std::lock_guard lock(mutex_);
  const std::uint64_t now = read_tsc();
  take_job(rank, now, true);
  record(now);
}

void JobTracer::take_job(const TracedJob& ranks, std::uint64_t now, bool add) {
  auto it = jobs_.find({ranks.uid, ranks.job_id});
  if (it == jobs_.end()) {
    // One user's many one-rank "jobs" must not take every other user's place.
    const auto users = std::count_if(jobs_.begin(), jobs_.end(),
                                     [&](const auto& j) { return j.first.first == ranks.uid; });
    if (jobs_.size() >= kMaxJobs || static_cast<std::size_t>(users) >= kMaxJobsPerUser) return;
    it = jobs_.emplace(Key{ranks.uid, ranks.job_id}, Job{}).first;
    it->second.ranks = TracedJob{ranks.uid, ranks.job_id, {}, {}, {}};
  }
  TracedJob& mine = it->second.ranks;
  const std::set<unsigned> before = mine.cpus;
  if (add) {
    mine.pids.insert(ranks.pids.begin(), ranks.pids.end());
    mine.cpus.insert(ranks.cpus.begin(), ranks.cpus.end());
    mine.commands.insert(ranks.commands.begin(), ranks.commands.end());
  } else {
    mine = ranks;
  }
  // A CPU a rank may no longer run on (a registration gone) keeps what it
  // was charged: the job ran there. One that comes back is charged again
  // from now, not from before.
  for (unsigned cpu : mine.cpus) {
    const auto [ledger, made] = it->second.cpus.try_emplace(cpu, Ledger{now, 0, {}, 0, false});
    if (!made && !before.contains(cpu)) ledger->second.since = now;
  }
}

void JobTracer::record(std::uint64_t now) {
  std::set<unsigned> wanted;
  for (const auto& [key, job] : jobs_) wanted.insert(job.ranks.cpus.begin(), job.ranks.cpus.end());
  if (wanted == recording_) return;
  for (unsigned cpu : wanted) {
    if (!recording_.contains(cpu)) fresh_[cpu] = now;
  }
  recording_ = wanted;
  if (wanted.empty()) {
    source_->round_ends();
  } else {
    const std::vector<unsigned> list(wanted.begin(), wanted.end());
    source_->round_begins(list);
  }
}

void JobTracer::read_now() {
  std::set<unsigned> cpus;
  {
    std::lock_guard lock(mutex_);
    cpus = recording_;
    for (const auto& [cpu, since] : fresh_) states_[cpu] = CpuState{since, {}};
    fresh_.clear();
  }
  std::erase_if(states_, [&](const auto& entry) { return !cpus.contains(entry.first); });
  const std::uint64_t now = read_tsc();
  Owners owners;
  for (unsigned cpu : cpus) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;  // a stop or a reload waits on this thread
    }
    std::vector<trace::Event> events;
    try {
      events = source_->take(cpu);
    } catch (const std::exception&) {
      continue;  // not traced, or unreadable now: the span goes on to the next read
    }
    CpuState& state = states_[cpu];
    if (state.from == 0 || state.from > now) state.from = now;
    const trace::Attribution span = trace::charge_span(events, state.from, now, state.carry);
    for (const trace::Culprit& c : span.culprits) {
      // Another namespace's thread id would name some other task here.
      if (!foreign_pids_ && c.kind == trace::CulpritKind::task && c.id > 0 &&
          !owners.contains(c.id))
        owners[c.id] = owner_of_(c.id);
    }
    charge(cpu, state.from, now, span, owners);
    state.from = now;
  }
}

void JobTracer::charge(unsigned cpu, std::uint64_t from, std::uint64_t to,
                       const trace::Attribution& span, const Owners& owners) {
  std::lock_guard lock(mutex_);
  for (auto& [key, job] : jobs_) {
    auto it = job.cpus.find(cpu);
    if (it == job.cpus.end() || !job.ranks.cpus.contains(cpu)) continue;
    Ledger& ledger = it->second;
    // A span begun before the job came to this CPU is another's.
    if (from < ledger.since) continue;
    ledger.ticks += to - from;
    ledger.overran = ledger.overran || span.overran;
    for (const trace::Culprit& c : span.culprits) add(ledger, c, job, owners);
  }
}

void JobTracer::add(Ledger& ledger, trace::Culprit c, const Job& job, const Owners& owners) const {
  if (c.kind == trace::CulpritKind::task) {
    if (c.id <= 0) return;  // the idle task
    if (foreign_pids_) {
      if (job.ranks.commands.contains(c.name)) return;  // the job's own, by command
      c.id = -1;  // the host's thread id, which names nothing here
    }
    const auto found = owners.find(c.id);
    const std::optional<TaskOwner> owner =
        found != owners.end() ? found->second : std::optional<TaskOwner>{};
    if (owner && job.ranks.pids.contains(owner->tgid)) return;  // the job's own
    const bool visible = owner && (owner->kernel_thread || owner->uid == job.ranks.uid);
    if (hidden_ && !visible) {
      c.name = kAnotherUsersTask;
      c.id = -1;
      c.prio = -1;
    }
  }
  auto it = std::find_if(ledger.named.begin(), ledger.named.end(),
                         [&](const trace::Culprit& x) { return same(x, c); });
  if (it != ledger.named.end()) {
    it->ticks += c.ticks;
    it->detours += c.detours;
    if (it->id != c.id) it->id = -1;  // several tasks of one command
    return;
  }
  if (ledger.named.size() < kMaxNamed) {
    ledger.named.push_back(std::move(c));
    return;
  }
  // Full: the smallest goes to `other`, so that neither the first comers
  // nor a user's many short tasks keep a larger culprit from being named.
  auto smallest = std::min_element(
      ledger.named.begin(), ledger.named.end(),
      [](const trace::Culprit& a, const trace::Culprit& b) { return a.ticks < b.ticks; });
  if (smallest->ticks >= c.ticks) {
    ledger.other_ticks += c.ticks;
    return;
  }
  ledger.other_ticks += smallest->ticks;
  *smallest = std::move(c);
}

std::optional<std::vector<TracedCpu>> JobTracer::charges(uid_t uid,
                                                         const std::string& job_id) const {
  std::lock_guard lock(mutex_);
  const auto it = jobs_.find({uid, job_id});
  if (it == jobs_.end()) return std::nullopt;
  const double hertz = tsc_hertz();
  std::vector<TracedCpu> out;
  for (const auto& [cpu, ledger] : it->second.cpus) {
    TracedCpu traced{cpu, static_cast<double>(ledger.ticks) / hertz, ledger.named,
                     static_cast<double>(ledger.other_ticks) / hertz, ledger.overran};
    for (trace::Culprit& c : traced.culprits) c.seconds = static_cast<double>(c.ticks) / hertz;
    std::sort(traced.culprits.begin(), traced.culprits.end(),
              [](const trace::Culprit& a, const trace::Culprit& b) {
                return std::tie(b.ticks, a.name) < std::tie(a.ticks, b.name);
              });
    out.push_back(std::move(traced));
  }
  return out;
}

std::optional<TaskOwner> task_owner(const std::string& proc_root, pid_t tid) {
  std::ifstream in(proc_root + "/" + std::to_string(tid) + "/status");
  if (!in) return std::nullopt;
  TaskOwner owner;
  bool tgid = false, uid = false;
  long ppid = -1;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "Tgid:") tgid = static_cast<bool>(fields >> owner.tgid);
    if (key == "PPid:") fields >> ppid;
    if (key == "Uid:") uid = static_cast<bool>(fields >> owner.uid);
  }
  if (!tgid || !uid) return std::nullopt;
  // kthreadd (pid 2) starts every kernel thread, and is one.
  owner.kernel_thread = owner.tgid == 2 || ppid == 2;
  return owner;
}

std::set<std::string> thread_commands(const std::string& proc_root, pid_t pid) {
  std::set<std::string> commands;
  std::error_code ec;
  const std::string tasks = proc_root + "/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream in(entry.path() / "comm");
    std::string command;
    if (std::getline(in, command) && !command.empty()) commands.insert(command);
  }
  return commands;
}

bool in_initial_pid_namespace(const std::string& proc_root) {
  constexpr std::uint64_t kInitialPidNamespace = 0xEFFFFFFCu;  // PROC_PID_INIT_INO
  struct stat info {};
  return ::stat((proc_root + "/self/ns/pid").c_str(), &info) == 0 &&
         info.st_ino == kInitialPidNamespace;
}

bool proc_hides_pids(const std::string& mountinfo) {
  // "22 28 0:21 / /proc rw,nosuid shared:12 - proc proc rw,hidepid=invisible":
  // the mount point is the fifth field, the type and the super options
  // follow the " - "; of mounts stacked on /proc the last is seen.
  bool hides = false;
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    if (!(fields >> id >> parent >> device >> root >> point) || point != "/proc") continue;
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream rest(line.substr(dash + 3));
    std::string type, source, options;
    if (!(rest >> type >> source >> options) || type != "proc") continue;
    hides = false;
    std::istringstream list(options);
    std::string option;
    while (std::getline(list, option, ',')) {
      if (option.rfind("hidepid=", 0) != 0) continue;
      const std::string value = option.substr(8);
      hides = value != "0" && value != "off";
    }
  }
  return hides;
}

}  // namespace corenoise

// The daemon's job tracer on a source of recorded events: what a job's
// CPUs are charged (other tasks, IRQs; not the job's own threads, not the
// idle task), what it records and when, what /proc's hidepid hides, and
// its bounds.
#include "daemon/job_tracer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "probe/tsc.h"

namespace corenoise {
namespace {

using trace::CulpritKind;
using trace::Event;
using trace::EventKind;

// Hands out the events a test queued for each CPU, and remembers what it
// was told to record.
class RecordedSource final : public trace::TraceSource {
 public:
  std::uint64_t window_begins(unsigned) noexcept override { return read_tsc(); }
  void window_ends(unsigned) noexcept override {}
  void window_abandoned(unsigned) noexcept override {}
  void round_begins(std::span<const unsigned> cpus) noexcept override {
    recording->assign(cpus.begin(), cpus.end());
  }
  void round_ends() noexcept override { recording->clear(); }
  std::string instance_name() const override { return "recorded"; }
  std::vector<Event> take(unsigned cpu) override {
    std::vector<Event> out = std::move((*queued)[cpu]);
    (*queued)[cpu].clear();
    return out;
  }
  void release() noexcept override {}

  std::shared_ptr<std::vector<unsigned>> recording = std::make_shared<std::vector<unsigned>>();
  std::shared_ptr<std::map<unsigned, std::vector<Event>>> queued =
      std::make_shared<std::map<unsigned, std::vector<Event>>>();
};

constexpr uid_t kUser = 1000, kOtherUser = 1001;

// Thread 7 and 8 are the rank's (process 7), 99 another user's injector,
// 98 the job's user's other program, 50 a kernel worker.
std::optional<TaskOwner> owner_of(pid_t tid) {
  static const std::map<pid_t, TaskOwner> owners = {{7, {7, kUser, false}},
                                                    {8, {7, kUser, false}},
                                                    {98, {98, kUser, false}},
                                                    {99, {99, kOtherUser, false}},
                                                    {50, {50, 0, true}}};
  const auto it = owners.find(tid);
  if (it == owners.end()) return std::nullopt;
  return it->second;
}

Event to_task(std::uint64_t t, int pid, const char* comm) {
  return {t, EventKind::task_switch, pid, 120, 0, comm};
}
Event event(std::uint64_t t, EventKind kind, int number = 0, const char* name = "") {
  return {t, kind, 0, 0, number, name};
}

TracedJob job_on(std::set<unsigned> cpus, std::string id = "slurm-1") {
  return {kUser, std::move(id), {7}, std::move(cpus), {}};
}

// A tracer over `source`, read only when the test says.
struct Fixture {
  explicit Fixture(bool hidden = false, bool foreign_pids = false) {
    auto owned = std::make_unique<RecordedSource>();
    source = owned.get();
    recording = owned->recording;
    queued = owned->queued;
    const auto counted = [lookups = lookups](pid_t tid) {
      ++*lookups;
      return owner_of(tid);
    };
    tracer = std::make_unique<JobTracer>(std::move(owned), counted, hidden, 3600, foreign_pids);
  }
  // Queues events `offsets` ticks (in millions) after now, and waits until
  // the last has passed, so that a read then covers them all.
  std::uint64_t at(double millions) const {
    return start + static_cast<std::uint64_t>(millions * 1e6);
  }
  void wait_past(double millions) const {
    while (read_tsc() <= at(millions)) {
    }
  }
  RecordedSource* source = nullptr;
  std::shared_ptr<std::vector<unsigned>> recording;
  std::shared_ptr<std::map<unsigned, std::vector<Event>>> queued;
  std::unique_ptr<JobTracer> tracer;
  std::uint64_t start = 0;
  std::shared_ptr<int> lookups = std::make_shared<int>(0);  // of a task's owner
};

const trace::Culprit* named(const TracedCpu& cpu, CulpritKind kind, const std::string& name) {
  for (const auto& c : cpu.culprits)
    if (c.kind == kind && c.name == name) return &c;
  return nullptr;
}

TEST(JobTracer, ChargesOtherTasksAndInterruptsNeitherTheJobsOwnThreadsNorTheIdleTask) {
  Fixture f;
  f.tracer->follow({job_on({1})});
  f.start = read_tsc();
  (*f.queued)[1] = {to_task(f.at(1), 7, "rank"),
                    to_task(f.at(2), 99, "inj"),
                    to_task(f.at(3), 8, "rank-helper"),
                    event(f.at(3.5), EventKind::irq_entry, 36, "virtio1-req.0"),
                    event(f.at(3.6), EventKind::irq_exit, 36),
                    to_task(f.at(4), 0, "swapper/1"),
                    to_task(f.at(5), 50, "kworker/1:1"),
                    to_task(f.at(5.5), 7, "rank")};
  f.wait_past(6);
  f.tracer->read_now();
  const auto charges = f.tracer->charges(kUser, "slurm-1");
  ASSERT_TRUE(charges);
  ASSERT_EQ(charges->size(), 1u);
  const TracedCpu& cpu = (*charges)[0];
  EXPECT_EQ(cpu.cpu, 1u);
  EXPECT_GT(cpu.seconds, 0);
  const auto* inj = named(cpu, CulpritKind::task, "inj");
  const auto* irq = named(cpu, CulpritKind::irq, "virtio1-req.0");
  const auto* worker = named(cpu, CulpritKind::task, "kworker/1:1");
  ASSERT_TRUE(inj && irq && worker);
  EXPECT_EQ(inj->id, 99);
  EXPECT_EQ(inj->ticks, 1'000'000u);
  EXPECT_EQ(irq->ticks, 100'000u);  // above the job's own thread: its loss
  EXPECT_EQ(worker->ticks, 500'000u);
  EXPECT_EQ(cpu.culprits.size(), 3u) << "the rank's threads and the idle task are not culprits";
  EXPECT_EQ(cpu.culprits[0].name, "inj");
  EXPECT_NEAR(inj->seconds, 1e6 / tsc_hertz(), 1e-9);
}

TEST(JobTracer, UnderHidepidAnotherUsersTaskIsNotNamedButTheKernelsAndTheUsersOwnAre) {
  Fixture f(/*hidden=*/true);
  f.tracer->follow({job_on({0})});
  f.start = read_tsc();
  (*f.queued)[0] = {to_task(f.at(1), 99, "inj"), to_task(f.at(2), 98, "make"),
                    to_task(f.at(3), 50, "kworker/0:2"), to_task(f.at(4), 7, "rank")};
  f.wait_past(5);
  f.tracer->read_now();
  const TracedCpu cpu = f.tracer->charges(kUser, "slurm-1")->at(0);
  EXPECT_EQ(named(cpu, CulpritKind::task, "inj"), nullptr);
  const auto* hidden = named(cpu, CulpritKind::task, "another user's task");
  ASSERT_TRUE(hidden);
  EXPECT_EQ(hidden->id, -1);
  EXPECT_TRUE(named(cpu, CulpritKind::task, "make"));
  EXPECT_TRUE(named(cpu, CulpritKind::task, "kworker/0:2"));
}

TEST(JobTracer, TheTasksOfOneCommandAreOneEntry) {
  Fixture f;
  f.tracer->follow({job_on({1})});
  f.start = read_tsc();
  // A shell loop's dd: a new process each pass.
  (*f.queued)[1] = {to_task(f.at(1), 301, "dd"), to_task(f.at(2), 302, "dd"),
                    to_task(f.at(3), 303, "dd"), to_task(f.at(4), 7, "rank")};
  f.wait_past(5);
  f.tracer->read_now();
  const TracedCpu cpu = f.tracer->charges(kUser, "slurm-1")->at(0);
  ASSERT_EQ(cpu.culprits.size(), 1u);
  EXPECT_EQ(cpu.culprits[0].ticks, 3'000'000u);
  EXPECT_EQ(cpu.culprits[0].id, -1) << "several tasks: no one id";
}

TEST(JobTracer, RecordsOnlyTheFollowedJobsCpusAndForgetsAJobThatEnded) {
  Fixture f;
  EXPECT_TRUE(f.recording->empty());
  EXPECT_EQ(f.tracer->follow({job_on({1, 3}), job_on({2}, "slurm-2")}), 0u);
  TracedJob unseen = job_on({1}, "slurm-3");
  unseen.pids = {7, 4444};  // 4444's /proc cannot be read
  EXPECT_EQ(f.tracer->follow({job_on({1, 3}), job_on({2}, "slurm-2"), unseen}), 1u);
  EXPECT_EQ(*f.recording, (std::vector<unsigned>{1, 2, 3}));
  f.tracer->follow({job_on({1, 3})});
  EXPECT_EQ(*f.recording, (std::vector<unsigned>{1, 3}));
  EXPECT_FALSE(f.tracer->charges(kUser, "slurm-2"));
  EXPECT_FALSE(f.tracer->charges(kOtherUser, "slurm-1")) << "a job is its user's";
  f.tracer->follow({});
  EXPECT_TRUE(f.recording->empty());
  EXPECT_FALSE(f.tracer->charges(kUser, "slurm-1"));
  // A rank's job-start: recorded at once, joined by the next rank's.
  f.tracer->watch(job_on({0}, "slurm-9"));
  f.tracer->watch(TracedJob{kUser, "slurm-9", {8}, {2}, {}});
  EXPECT_EQ(*f.recording, (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(f.tracer->charges(kUser, "slurm-9")->size(), 2u);
}

TEST(JobTracer, AJobIsChargedOnlyFromWhenItCameToACpu) {
  Fixture f;
  f.tracer->follow({job_on({1})});
  f.start = read_tsc();
  (*f.queued)[1] = {to_task(f.at(1), 99, "inj")};
  f.wait_past(2);
  // slurm-2 arrives while inj runs: the span begun before it is slurm-1's.
  f.tracer->follow({job_on({1}), job_on({1}, "slurm-2")});
  f.tracer->read_now();
  EXPECT_TRUE(f.tracer->charges(kUser, "slurm-2")->at(0).culprits.empty());
  EXPECT_FALSE(f.tracer->charges(kUser, "slurm-1")->at(0).culprits.empty());
  f.start = read_tsc();
  f.wait_past(1);
  f.tracer->read_now();
  const TracedCpu later = f.tracer->charges(kUser, "slurm-2")->at(0);
  ASSERT_EQ(later.culprits.size(), 1u);
  EXPECT_EQ(later.culprits[0].name, "inj");  // still running: carried on
}

TEST(JobTracer, ACpuThatComesBackToAJobIsChargedFromItsReturn) {
  Fixture f;
  f.tracer->follow({job_on({1, 2})});
  f.tracer->follow({job_on({1})});  // the rank on CPU 2 left; the job goes on
  f.start = read_tsc();
  (*f.queued)[2] = {to_task(f.at(1), 99, "inj")};
  f.wait_past(2);
  f.tracer->follow({job_on({1, 2})});  // and came back, after inj began
  f.tracer->read_now();
  const auto charges = f.tracer->charges(kUser, "slurm-1");
  ASSERT_TRUE(charges);
  for (const TracedCpu& cpu : *charges)
    EXPECT_TRUE(cpu.culprits.empty()) << "cpu " << cpu.cpu << ": before the rank came back";
}

TEST(JobTracer, KeepsAtMostItsNamedEntriesAndJobs) {
  Fixture f;
  f.tracer->follow({job_on({0})});
  f.start = read_tsc();
  std::vector<Event> events;
  const int tasks = static_cast<int>(JobTracer::kMaxNamed) + 8;
  std::vector<std::string> names;
  for (int i = 0; i < tasks; ++i) names.push_back("t" + std::to_string(i));
  for (int i = 0; i < tasks; ++i)
    events.push_back(
        to_task(f.at(0.1 * (i + 1)), 1000 + i, names[static_cast<std::size_t>(i)].c_str()));
  events.push_back(to_task(f.at(0.1 * (tasks + 1)), 7, "rank"));
  (*f.queued)[0] = events;
  f.wait_past(0.1 * (tasks + 2));
  f.tracer->read_now();
  TracedCpu cpu = f.tracer->charges(kUser, "slurm-1")->at(0);
  EXPECT_EQ(cpu.culprits.size(), JobTracer::kMaxNamed);
  EXPECT_NEAR(cpu.other_seconds, 8 * 1e5 / tsc_hertz(), 1e-9);
  // A larger one later takes the smallest's place: the first comers do not
  // keep it out.
  f.start = read_tsc();
  (*f.queued)[0] = {to_task(f.at(0.1), 2000, "late-big"), to_task(f.at(1.1), 7, "rank")};
  f.wait_past(1.2);
  f.tracer->read_now();
  cpu = f.tracer->charges(kUser, "slurm-1")->at(0);
  EXPECT_EQ(cpu.culprits.size(), JobTracer::kMaxNamed);
  EXPECT_EQ(cpu.culprits.front().name, "late-big");
  EXPECT_NEAR(cpu.other_seconds, 9 * 1e5 / tsc_hertz(), 1e-9);

  // Jobs: kMaxJobs on a node, of many users; kMaxJobsPerUser of one.
  std::vector<TracedJob> many;
  for (std::size_t i = 0; i < JobTracer::kMaxJobs + 1; ++i)
    many.push_back(TracedJob{static_cast<uid_t>(2000 + i), "job", {7}, {0}, {}});
  f.tracer->follow(many);
  std::size_t followed = 0;
  for (const TracedJob& job : many) followed += f.tracer->charges(job.uid, "job") ? 1 : 0;
  EXPECT_EQ(followed, JobTracer::kMaxJobs);
  JobTracer& tracer = *f.tracer;
  tracer.follow({});
  for (std::size_t i = 0; i < JobTracer::kMaxJobsPerUser + 1; ++i)
    tracer.watch(job_on({0}, "one-user-" + std::to_string(i)));
  followed = 0;
  for (std::size_t i = 0; i < JobTracer::kMaxJobsPerUser + 1; ++i)
    followed += tracer.charges(kUser, "one-user-" + std::to_string(i)) ? 1 : 0;
  EXPECT_EQ(followed, JobTracer::kMaxJobsPerUser);
}

// In a container's PID namespace the tracer's thread ids are the host's:
// the job's own tasks are told by their commands, and no id is given (it
// would name some other task of the container's /proc).
TEST(JobTracer, InAPidNamespaceOfItsOwnTheJobsTasksAreToldByTheirCommands) {
  Fixture f(/*hidden=*/false, /*foreign_pids=*/true);
  TracedJob job = job_on({0});
  job.commands = {"halo_app_mpich"};
  f.tracer->follow({job});
  *f.lookups = 0;
  f.start = read_tsc();
  (*f.queued)[0] = {to_task(f.at(1), 70001, "halo_app_mpich"), to_task(f.at(2), 99, "corenoise"),
                    to_task(f.at(3), 70002, "halo_app_mpich")};
  f.wait_past(4);
  f.tracer->read_now();
  const TracedCpu cpu = f.tracer->charges(kUser, "slurm-1")->at(0);
  ASSERT_EQ(cpu.culprits.size(), 1u);
  EXPECT_EQ(cpu.culprits[0].name, "corenoise");
  EXPECT_EQ(cpu.culprits[0].id, -1);
  EXPECT_EQ(*f.lookups, 0) << "no thread id of the trace is looked up in our /proc";
}

TEST(JobTracerProc, HidepidIsReadFromTheMountTableLastMountWins) {
  const std::string plain =
      "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n";
  EXPECT_FALSE(proc_hides_pids(plain));
  EXPECT_TRUE(proc_hides_pids(
      "22 28 0:21 / /proc rw,relatime shared:12 - proc proc rw,hidepid=invisible\n"));
  EXPECT_TRUE(proc_hides_pids("22 28 0:21 / /proc rw shared:12 - proc proc rw,hidepid=2\n"));
  EXPECT_FALSE(proc_hides_pids("22 28 0:21 / /proc rw - proc proc rw,hidepid=0\n"));
  EXPECT_FALSE(
      proc_hides_pids("30 28 0:40 / /run/x/proc rw - proc proc rw,hidepid=invisible\n" + plain));
  EXPECT_FALSE(proc_hides_pids("22 28 0:21 / /proc rw - proc proc rw,hidepid=2\n" + plain));
}

TEST(JobTracerProc, AThreadsOwnerIsItsProcessAndUserAndKthreaddsChildrenAreTheKernels) {
  const auto root =
      std::filesystem::temp_directory_path() / ("corenoise-owner-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "4243");
  std::filesystem::create_directories(root / "51");
  std::ofstream(root / "4243" / "status")
      << "Name:\tpython3\nTgid:\t4242\nPid:\t4243\nPPid:\t4000\nUid:\t1000\t1000\t1000\t1000\n";
  std::ofstream(root / "51" / "status")
      << "Name:\tkworker/1:1\nTgid:\t51\nPid:\t51\nPPid:\t2\nUid:\t0\t0\t0\t0\n";
  const auto thread = task_owner(root.string(), 4243);
  ASSERT_TRUE(thread);
  EXPECT_EQ(thread->tgid, 4242);
  EXPECT_EQ(thread->uid, 1000u);
  EXPECT_FALSE(thread->kernel_thread);
  EXPECT_TRUE(task_owner(root.string(), 51)->kernel_thread);
  EXPECT_FALSE(task_owner(root.string(), 52)) << "gone";
  std::filesystem::create_directories(root / "4242" / "task" / "4242");
  std::filesystem::create_directories(root / "4242" / "task" / "4243");
  std::ofstream(root / "4242" / "task" / "4242" / "comm") << "python3\n";
  std::ofstream(root / "4242" / "task" / "4243" / "comm") << "jax-worker\n";
  EXPECT_EQ(thread_commands(root.string(), 4242), (std::set<std::string>{"jax-worker", "python3"}));
  // Its namespace's link names the kernel's initial one by that inode.
  EXPECT_EQ(in_initial_pid_namespace("/proc"),
            std::filesystem::read_symlink("/proc/self/ns/pid") == "pid:[4026531836]");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace corenoise

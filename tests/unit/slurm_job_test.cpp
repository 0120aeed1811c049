// Which Slurm job a rank runs in: the line of /proc/PID/cgroup a rank names
// (daemon/control/slurm_cgroup.h), where the hierarchies are mounted, and
// what cgroupfs confirms (daemon/slurm_job.h), on fixture trees laid out as
// Slurm's cgroup/v2 and cgroup/v1 plugins lay them out. This machine runs
// no Slurm with a cgroup plugin; the last test gives a real process's
// pidfd to KernelProcessFacts over a fixture tree that lists its pid.
#include "daemon/slurm_job.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/control/slurm_cgroup.h"
#include "daemon/peer_process.h"

namespace corenoise {
namespace {

namespace fs = std::filesystem;

TEST(SlurmCgroup, ReadsTheJobFromSlurmsTwoLayouts) {
  const auto v2 = parse_slurm_cgroup("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_3");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->hierarchy, "");
  EXPECT_EQ(v2->job_id, "42");
  EXPECT_EQ(v2->job_path, "/system.slice/slurmstepd.scope/job_42");
  EXPECT_EQ(v2->path, "/system.slice/slurmstepd.scope/job_42/step_0/user/task_3");
  EXPECT_FALSE(v2->uid);
  // The batch step, and a step's own nested cgroups.
  EXPECT_TRUE(parse_slurm_cgroup("0::/system.slice/slurmstepd.scope/job_9/step_batch/user/task_0"));
  const auto v1 = parse_slurm_cgroup("5:cpuset:/slurm/uid_1000/job_7/step_2/task_0");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->hierarchy, "cpuset");
  EXPECT_EQ(v1->job_id, "7");
  EXPECT_EQ(v1->job_path, "/slurm/uid_1000/job_7");
  EXPECT_EQ(v1->uid, 1000u);
  EXPECT_TRUE(parse_slurm_cgroup("3:cpu,cpuacct:/slurm/uid_0/job_1/step_0/task_0"));
  // Debian 12's slurmd (built for several on a host), as a real srun showed.
  const auto debian = parse_slurm_cgroup("3:cpuset:/slurm_vm/uid_0/job_1/step_0");
  ASSERT_TRUE(debian);
  EXPECT_EQ(debian->job_id, "1");
  EXPECT_EQ(debian->job_path, "/slurm_vm/uid_0/job_1");
}

TEST(SlurmCgroup, RefusesWhatIsNotASlurmJobsCgroup) {
  for (const char* line : {
           "", "0::/",
           "0::/user.slice/user-1000.slice/session-3.scope",            // a login session
           "0::/system.slice/slurmstepd.scope/system",                  // slurmstepd's own
           "0::/system.slice/slurmstepd.scope/job_/step_0",             // no number
           "0::/system.slice/slurmstepd.scope/job_042/step_0",          // not canonical
           "0::/system.slice/slurmstepd.scope/job_4x/step_0",           // not a number
           "0::/system.slice/slurmstepd.scope/job_12345678901/step_0",  // past 32 bits
           "0::/system.slice/slurmstepd.scope/job_4/../../../etc",      // leaves the cgroup
           "0::/system.slice/slurmstepd.scope/job_4/./step_0",
           "0::/system.slice/slurmstepd.scope//job_4/step_0",
           "0::system.slice/slurmstepd.scope/job_4",         // not absolute
           "0:cpuset:/system.slice/slurmstepd.scope/job_4",  // v2's id with controllers
           "5::/slurm/uid_1000/job_7/step_0",                // v1's without controllers
           "5:cpuset:/slurm/job_7/step_0",                   // v1 without the user
           "5:cpuset:/system.slice/slurmstepd.scope/job_7",  // v2's layout in v1
           "x:cpuset:/slurm/uid_1000/job_7",
           "0::/system.slice/slurmstepd.scope/job_4/step_0\n",  // a control character
       }) {
    EXPECT_FALSE(parse_slurm_cgroup(line)) << line;
  }
  EXPECT_FALSE(parse_slurm_cgroup("0::/system.slice/slurmstepd.scope/job_4/" +
                                  std::string(kMaxCgroupLineChars, 'a')));
}

// This machine's processes run under no Slurm job.
TEST(SlurmCgroup, ThisProcessRunsInNone) { EXPECT_EQ(slurm_cgroup_of_this_process(), ""); }

TEST(CgroupMounts, FromMountinfoOfAUnifiedAndAHybridHost) {
  const CgroupMounts unified = CgroupMounts::from_mountinfo(
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "26 21 0:23 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
  EXPECT_EQ(unified.directory_of(""), "/sys/fs/cgroup");
  EXPECT_FALSE(unified.directory_of("cpuset"));

  const CgroupMounts hybrid = CgroupMounts::from_mountinfo(
      "30 25 0:26 / /sys/fs/cgroup/unified rw shared:5 - cgroup2 cgroup2 rw\n"
      "31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw shared:6 - cgroup cgroup rw,cpu,cpuacct\n"
      "32 25 0:28 / /sys/fs/cgroup/cpuset rw shared:7 - cgroup cgroup rw,cpuset\n"
      "33 25 0:29 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
      // A subtree (a container's view): its paths do not start at the root.
      "34 25 0:30 /docker/abc /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
      // A mount point with a space, as mountinfo escapes it.
      "35 25 0:31 / /srv/my\\040cgroups rw - cgroup cgroup rw,pids\n");
  EXPECT_EQ(hybrid.directory_of(""), "/sys/fs/cgroup/unified");
  EXPECT_EQ(hybrid.directory_of("cpuset"), "/sys/fs/cgroup/cpuset");
  EXPECT_EQ(hybrid.directory_of("cpu,cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(hybrid.directory_of("pids"), "/srv/my cgroups");
  EXPECT_FALSE(hybrid.directory_of("freezer"));
  EXPECT_FALSE(hybrid.directory_of("xattr"));
  EXPECT_FALSE(hybrid.directory_of("name=systemd"));
}

// A fixture cgroupfs: `root` holds the hierarchies as directories.
class SlurmJobTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "corenoise-cgroups.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << text;
  }
  std::string root_;
};

TEST_F(SlurmJobTree, AV2JobIsConfirmedByItsCgroupProcsWithItsCpuset) {
  const std::string job = "/unified/system.slice/slurmstepd.scope/job_42";
  write(job + "/cpuset.cpus.effective", "0-3,8\n");
  write(job + "/step_0/user/task_0/cgroup.procs", "311\n4242\n");
  write(job + "/step_0/user/task_1/cgroup.procs", "4243\n");
  CgroupMounts mounts;
  mounts.add("", root_ + "/unified");
  const auto cgroup =
      parse_slurm_cgroup("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0");
  ASSERT_TRUE(cgroup);
  const auto confirmed = confirm_slurm_job(mounts, *cgroup, 4242);
  ASSERT_TRUE(confirmed);
  EXPECT_EQ(confirmed->id, "42");
  EXPECT_EQ(confirmed->cpus, (std::vector<unsigned>{0, 1, 2, 3, 8}));
  // Another task's pid; a pid the file has only as a prefix; a hierarchy not mounted.
  EXPECT_FALSE(confirm_slurm_job(mounts, *cgroup, 4243));
  EXPECT_FALSE(confirm_slurm_job(mounts, *cgroup, 424));
  EXPECT_FALSE(confirm_slurm_job(CgroupMounts{}, *cgroup, 4242));
  // A job without the cpuset controller: confirmed, no bound known.
  fs::remove(root_ + job + "/cpuset.cpus.effective");
  const auto without = confirm_slurm_job(mounts, *cgroup, 4242);
  ASSERT_TRUE(without);
  EXPECT_FALSE(without->cpus);
}

TEST_F(SlurmJobTree, AV1FreezerLineTakesItsCpusetFromTheCpusetHierarchy) {
  write("/freezer/slurm/uid_1000/job_7/step_2/task_0/cgroup.procs", "900\n");
  write("/cpuset/slurm/uid_1000/job_7/cpuset.effective_cpus", "4-5\n");
  CgroupMounts mounts;
  mounts.add("freezer", root_ + "/freezer");
  mounts.add("cpuset", root_ + "/cpuset");
  const auto cgroup = parse_slurm_cgroup("9:freezer:/slurm/uid_1000/job_7/step_2/task_0");
  ASSERT_TRUE(cgroup);
  const auto confirmed = confirm_slurm_job(mounts, *cgroup, 900);
  ASSERT_TRUE(confirmed);
  EXPECT_EQ(confirmed->id, "7");
  EXPECT_EQ(confirmed->cpus, (std::vector<unsigned>{4, 5}));
}

// The kernel's part: a real child, its pidfd, and a fixture cgroup.procs
// listing its pid. Confirmed while it runs; not once it has exited (its
// pid could name another process by then).
TEST_F(SlurmJobTree, TheKernelsFactsBelieveACgroupOnlyWhileItsProcessRuns) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  ASSERT_GE(pidfd, 0);
  write("/unified/system.slice/slurmstepd.scope/job_5/step_0/user/task_0/cgroup.procs",
        std::to_string(child) + "\n");
  CgroupMounts mounts;
  mounts.add("", root_ + "/unified");
  const KernelProcessFacts facts(mounts);
  const PeerCredentials peer{child, ::getuid(), ::getgid(), pidfd};
  const auto cgroup =
      parse_slurm_cgroup("0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0");
  ASSERT_TRUE(cgroup);
  const auto running = facts.slurm_job(peer, *cgroup);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->id, "5");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(facts.slurm_job(peer, *cgroup));
  ::close(pidfd);
}

}  // namespace
}  // namespace corenoise

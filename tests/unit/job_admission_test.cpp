// Which job reports the daemon takes (daemon/job_admission.h), on /proc
// trees made in a temporary folder: each condition accepted and refused,
// the reason and the message, and files that are missing or garbled.
#include "daemon/job_admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job_proc_tree.h"

namespace corenoise {
namespace {

using job_test::ProcTree;

constexpr uid_t kUser = 1000;
constexpr uid_t kOther = 1001;

// A status file as the kernel writes it, with the lines admission reads.
std::string status_text(uid_t real, uid_t effective, const std::string& cpus) {
  const std::string r = std::to_string(real), e = std::to_string(effective);
  return "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPPid:\t1\n"
         "Uid:\t" +
         r + "\t" + e + "\t" + e + "\t" + e +
         "\n"
         "Gid:\t" +
         r + "\t" + r + "\t" + r + "\t" + r +
         "\n"
         "Threads:\t3\nCpus_allowed:\tff\nCpus_allowed_list:\t" +
         cpus +
         "\n"
         "Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t12\n";
}

const std::string kPlainMaps =
    "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234                       /usr/bin/python3.11\n"
    "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f1c2a000000-7f1c2a1d5000 r-xp 00028000 08:01 5678                       "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7ffd3a000000-7ffd3a021000 rw-p 00000000 00:00 0                          [stack]\n";

std::string rank_maps(const std::string& library =
                          "/usr/lib/x86_64-linux-gnu/corenoise/libcorenoise-job-openmpi.so") {
  return kPlainMaps + "7f1c2b000000-7f1c2b040000 r-xp 00000000 08:01 9012                       " +
         library + "\n";
}

JobRequest report(const std::string& id, const std::vector<unsigned>& cpus) {
  JobRequest r;
  r.job_id = id;
  r.ended_unix_seconds = 1795962900;
  r.elapsed_seconds = 10;
  r.ranks = 2;
  for (unsigned cpu : cpus) r.cpus.push_back({cpu, {0.5, 0, 0, 0, 0, 0, 0}});
  return r;
}

class JobAdmissionTest : public ::testing::Test {
 protected:
  // A process PID of `uid` bound to `cpus`, with the job library mapped or not.
  void process(pid_t pid, uid_t uid, const std::string& cpus, bool rank) {
    tree_.write(std::to_string(pid) + "/status", status_text(uid, uid, cpus));
    tree_.write(std::to_string(pid) + "/maps", rank ? rank_maps() : kPlainMaps);
  }

  JobAdmissionVerdict admit(pid_t pid, uid_t uid, const JobRequest& r) {
    return admission_.admit(tree_.root(), PeerCredentials{pid, uid, uid}, r);
  }

  ProcTree tree_;
  JobAdmission admission_;
};

#define EXPECT_ACCEPTED(verdict)              \
  do {                                        \
    const JobAdmissionVerdict v_ = (verdict); \
    EXPECT_FALSE(v_.refusal) << v_.error;     \
    EXPECT_EQ(v_.error, "");                  \
  } while (0)

#define EXPECT_REFUSED(verdict, reason, fragment)                                                  \
  do {                                                                                             \
    const JobAdmissionVerdict v_ = (verdict);                                                      \
    EXPECT_EQ(v_.refusal, reason) << v_.error;                                                     \
    EXPECT_EQ(                                                                                     \
        v_.error.rfind(std::string("job: refused (") + std::string(to_string(reason)) + "): ", 0), \
        0u)                                                                                        \
        << v_.error;                                                                               \
    EXPECT_NE(v_.error.find(fragment), std::string::npos) << v_.error;                             \
  } while (0)

TEST_F(JobAdmissionTest, ARankReportingItsOwnCpusIsAccepted) {
  process(4242, kUser, "0-3", true);
  EXPECT_ACCEPTED(admit(4242, kUser, report("slurm-1", {0, 3})));
  EXPECT_ACCEPTED(admit(4242, kUser, report("slurm-2", {})));  // a job that lost nothing here
  EXPECT_EQ(admission_.remembered(), 2u);
}

TEST_F(JobAdmissionTest, WithoutCredentialsNothingIsAccepted) {
  process(4242, kUser, "0-3", true);
  EXPECT_REFUSED(admission_.admit(tree_.root(), std::nullopt, report("j", {0})),
                 JobRefusal::no_credentials, "no credentials (SO_PEERCRED)");
  EXPECT_REFUSED(admit(0, kUser, report("j", {0})), JobRefusal::no_credentials, "SO_PEERCRED");
}

TEST_F(JobAdmissionTest, ASenderThatIsGoneIsRefused) {
  EXPECT_REFUSED(
      admit(4242, kUser, report("j", {0})), JobRefusal::no_credentials,
      "process 4242 (uid 1000) is no longer running (" + tree_.root() + "/4242/status is missing");
  // A status file without what admission needs is no evidence either.
  tree_.write("4242/status", "Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\n");
  tree_.write("4242/maps", rank_maps());
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::no_credentials,
                 "no Uid and Cpus_allowed_list");
  tree_.write("4242/status", status_text(kUser, kUser, "0-x"));
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::no_credentials, "no longer");
  tree_.write("4242/status", "Cpus_allowed_list:\t0-3\nUid:\t-1\t-1\n");
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::no_credentials, "no longer");
}

// The pid was recycled by another user's rank, or the sender changed user
// after connecting: the credentials are not that process's.
TEST_F(JobAdmissionTest, AnotherUsersProcessIsRefused) {
  process(4242, kOther, "0-3", true);
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::wrong_user,
                 "process 4242 runs as uid 1001, not as the sender's uid 1000");
  // The effective uid is what SO_PEERCRED records, not the real one.
  tree_.write("4242/status", status_text(kUser, kOther, "0-3"));
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::wrong_user, "uid 1001");
  EXPECT_ACCEPTED(admit(4242, kOther, report("j", {0})));
}

TEST_F(JobAdmissionTest, OnlyAProcessWithTheJobLibraryMappedIsARank) {
  process(4242, kUser, "0-3", false);
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::not_a_rank,
                 "process 4242 (uid 1000) is not a rank of a job: no libcorenoise-job-* library "
                 "in " +
                     tree_.root() + "/4242/maps");
  // Not the basename: a directory of that name, or a library named alike.
  for (const char* path :
       {"/opt/libcorenoise-job-mpich/lib/libfoo.so", "/usr/lib/libcorenoise-jobs.so",
        "/usr/lib/libcorenoise-probe.so", "libcorenoise-job-mpich.so"}) {
    tree_.write("4242/maps", rank_maps(path));
    EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::not_a_rank,
                   "no libcorenoise-job-*");
  }
  tree_.remove("4242/maps");
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::not_a_rank, "maps");
  constexpr char kGarbage[] = "\0\xff\n\n   \nnot a maps line\n";
  tree_.write("4242/maps", std::string(kGarbage, sizeof kGarbage - 1));
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::not_a_rank, "maps");
  // Either family's library, from anywhere, even replaced on disk since.
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/corenoise/libcorenoise-job-mpich.so",
                           "/tmp/build/collector/libcorenoise-job-openmpi.so (deleted)",
                           "/home/alice/lib with space/libcorenoise-job-mpich.so"}) {
    tree_.write("4242/maps", rank_maps(path));
    EXPECT_ACCEPTED(admit(4242, kUser, report(path, {0})));
  }
}

// The node's first rank reports for all the node's ranks: CPUs beyond its
// own affinity count if another rank of the same user may run there.
TEST_F(JobAdmissionTest, CpusMustBeWithinTheAffinityOfTheUsersRanks) {
  process(4242, kUser, "0", true);   // the reporting rank, bound to CPU 0
  process(4243, kUser, "1", true);   // its peer on CPU 1
  process(4244, kUser, "2", false);  // the same user's shell on CPU 2: not a rank
  process(4245, kOther, "3", true);  // another user's rank on CPU 3
  tree_.write("self/status", status_text(kUser, kUser, "0-7"));  // not a process directory
  tree_.write("stat", "cpu  1 2 3 4\n");
  EXPECT_ACCEPTED(admit(4242, kUser, report("j1", {0, 1})));
  EXPECT_ACCEPTED(admit(4242, kUser, report("j2", {1})));
  EXPECT_REFUSED(admit(4242, kUser, report("j3", {0, 1, 2})), JobRefusal::cpu_outside_affinity,
                 "cpu 2 is outside the affinity of every rank of uid 1000 on this node (the "
                 "sender's: 0)");
  EXPECT_REFUSED(admit(4242, kUser, report("j4", {3, 5, 6, 7})), JobRefusal::cpu_outside_affinity,
                 "cpu 3,5-7 is outside");
  // The peer ended: its CPU is nobody's any more.
  tree_.remove("4243");
  EXPECT_REFUSED(admit(4242, kUser, report("j5", {1})), JobRefusal::cpu_outside_affinity, "cpu 1");
  // The sender's own affinity needs no peer.
  EXPECT_ACCEPTED(admit(4242, kUser, report("j6", {0})));
}

TEST_F(JobAdmissionTest, OneReportPerSenderAndJob) {
  process(4242, kUser, "0-1", true);
  process(4243, kUser, "0-1", true);
  EXPECT_ACCEPTED(admit(4242, kUser, report("slurm-9", {0})));
  EXPECT_REFUSED(admit(4242, kUser, report("slurm-9", {1})), JobRefusal::duplicate,
                 "process 4242 (uid 1000) already reported job 'slurm-9'");
  EXPECT_ACCEPTED(admit(4242, kUser, report("slurm-10", {0})));  // its next job
  EXPECT_ACCEPTED(admit(4243, kUser, report("slurm-9", {1})));   // a rank on another node's behalf
  // A refused report takes no slot: the same sender may still report it.
  EXPECT_REFUSED(admit(4242, kUser, report("slurm-11", {5})), JobRefusal::cpu_outside_affinity,
                 "cpu 5");
  EXPECT_ACCEPTED(admit(4242, kUser, report("slurm-11", {1})));
}

TEST_F(JobAdmissionTest, TheRememberedReportsAreBounded) {
  process(4242, kUser, "0", true);
  JobAdmission small(2);
  auto admit_small = [&](const std::string& id) {
    return small.admit(tree_.root(), PeerCredentials{4242, kUser, kUser}, report(id, {0}));
  };
  EXPECT_ACCEPTED(admit_small("a"));
  EXPECT_ACCEPTED(admit_small("b"));
  EXPECT_ACCEPTED(admit_small("c"));  // forgets "a"
  EXPECT_EQ(small.remembered(), 2u);
  EXPECT_REFUSED(admit_small("b"), JobRefusal::duplicate, "'b'");
  EXPECT_REFUSED(admit_small("c"), JobRefusal::duplicate, "'c'");
  EXPECT_ACCEPTED(admit_small("a"));
  EXPECT_EQ(JobAdmission().remembered(), 0u);
  EXPECT_EQ(kRememberedJobReports, 4096u);
}

TEST(JobAdmissionProc, ReadsTheStatusLinesItNeeds) {
  ProcTree tree;
  tree.write("7/status", status_text(0, 65534, "0-3,8,10-11"));
  const auto status = read_process_status(tree.root(), 7);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->effective_uid, 65534u);
  EXPECT_EQ(status->affinity, (std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_FALSE(read_process_status(tree.root(), 8));
  EXPECT_FALSE(read_process_status(tree.root() + "/nowhere", 7));
  // Uid must be a line of its own, not a prefix of another name.
  tree.write("9/status", "Uidx:\t1\t2\t3\t4\nCpus_allowed_list:\t0\n");
  EXPECT_FALSE(read_process_status(tree.root(), 9));
  tree.write("9/status", "Uid:\t1\t2\t3\t4\nCpus_allowed_list:\t\n");
  EXPECT_FALSE(read_process_status(tree.root(), 9));
  EXPECT_FALSE(maps_job_library(tree.root(), 9));
  tree.write("9/maps", rank_maps());
  EXPECT_TRUE(maps_job_library(tree.root(), 9));
}

TEST(JobAdmissionProc, TheReasonsAreAFixedSetOfLabels) {
  std::vector<std::string> names;
  for (JobRefusal reason : kJobRefusals) {
    EXPECT_EQ(kJobRefusals[index_of(reason)], reason);
    names.emplace_back(to_string(reason));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"no_credentials", "wrong_user", "not_a_rank",
                                             "cpu_outside_affinity", "duplicate", "invalid"}));
}

}  // namespace
}  // namespace corenoise

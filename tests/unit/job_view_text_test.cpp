// What a person reads of a job in the views (collector/report/): call sites
// with their C++ symbols demangled, and the advice that points at "the
// process named here" only where a process is named.
#include <gtest/gtest.h>

#include "collector/report/call_site_text.h"
#include "collector/report/cause_advice.h"
#include "collector/report/rank_advice.h"

namespace corenoise {
namespace {

TEST(CallSiteText, ACppSymbolReadsAsTheSourceSpellsIt) {
  EXPECT_EQ(demangled_symbol("_Z13fft5d_executeP12fft5d_plan_tiP13gmx_wallcyclePd"),
            "fft5d_execute(fft5d_plan_t*, int, gmx_wallcycle*, double*)");
  EXPECT_EQ(demangled_symbol("_ZN9LAMMPS_NS6Verlet3runEi"), "LAMMPS_NS::Verlet::run(int)");
}

TEST(CallSiteText, AnythingElseIsLeftAsItIs) {
  EXPECT_EQ(demangled_symbol("MPI_Allreduce"), "MPI_Allreduce");
  EXPECT_EQ(demangled_symbol("main"), "main");
  EXPECT_EQ(demangled_symbol("_Zgarbage!"), "_Zgarbage!");  // not a mangled name after all
  EXPECT_EQ(demangled_symbol(""), "");
}

TEST(CallSiteText, TheSiteKeepsItsLibraryAndOffset) {
  EXPECT_EQ(readable_site("libgromacs_mpi.so.8+0x1a2b (_Z13fft5d_executeP12fft5d_plan_tiP13gmx_"
                          "wallcyclePd)"),
            "libgromacs_mpi.so.8+0x1a2b (fft5d_execute(fft5d_plan_t*, int, gmx_wallcycle*, "
            "double*))");
  EXPECT_EQ(readable_site("lmp+0x4f10 (main)"), "lmp+0x4f10 (main)");
  EXPECT_EQ(readable_site("solver.py:88"), "solver.py:88");
  EXPECT_EQ(readable_site("jax_mpi.py:41 in main"), "jax_mpi.py:41 in main");
  EXPECT_EQ(readable_site("other sites"), "other sites");
  EXPECT_EQ(readable_site("0x7f3a12"), "0x7f3a12");
  EXPECT_EQ(readable_site("(_Z1fv)"), "(_Z1fv)");  // no library before it: not dladdr's form
}

JobRank late_rank(JobCause cause, std::vector<JobCulprit> culprits) {
  JobRank rank;
  rank.attribution.main_cause = cause;
  rank.culprits = std::move(culprits);
  return rank;
}

constexpr const char* kPointer = "find the process named here";

TEST(RankAdvice, FindTheProcessOnlyWhereOneIsNamed) {
  const JobCulprit process{JobCulprit::Kind::process, "stress-ng", 4242, 3, 1.5};
  const JobCulprit thread{JobCulprit::Kind::thread, "omp-worker", 0, 0, 1.0};
  const std::string named = rank_advice(late_rank(JobCause::other_processes, {thread, process}));
  EXPECT_NE(named.find(kPointer), std::string::npos) << named;
  EXPECT_TRUE(named.starts_with(cause_advice(JobCause::other_processes))) << named;

  for (const auto& culprits : {std::vector<JobCulprit>{}, std::vector<JobCulprit>{thread}}) {
    const std::string unnamed = rank_advice(late_rank(JobCause::other_processes, culprits));
    EXPECT_EQ(unnamed, cause_advice(JobCause::other_processes));
    EXPECT_EQ(unnamed.find(kPointer), std::string::npos) << unnamed;
  }
  // Another cause never points at a process, even where one is named.
  const std::string interrupts = rank_advice(late_rank(JobCause::interrupts, {process}));
  EXPECT_EQ(interrupts, cause_advice(JobCause::interrupts));
}

// A device's IRQ named on the rank's CPU: the advice says which to move
// first; a softirq or the timer, with no affinity of its own, is not.
TEST(RankAdvice, InterruptsPointAtTheDevicesIrqNamedFirst) {
  JobCulprit softirq{JobCulprit::Kind::softirq, "", 0, 1, 0};
  softirq.line = "BLOCK";
  JobCulprit timer{JobCulprit::Kind::irq, "Local timer interrupts", 0, 1, 0};
  timer.line = "LOC";
  JobCulprit disk{JobCulprit::Kind::irq, "virtio1-req.0", 0, 1, 0};
  disk.line = "36";
  EXPECT_EQ(rank_advice(late_rank(JobCause::interrupts, {softirq, timer, disk})),
            std::string(cause_advice(JobCause::interrupts)) +
                std::string("; IRQ 36 first (/proc/irq/36/smp_affinity_list)"));
  EXPECT_EQ(rank_advice(late_rank(JobCause::interrupts, {softirq, timer})),
            cause_advice(JobCause::interrupts));
}

}  // namespace
}  // namespace corenoise

// Which family launched a process, from the variables each launcher sets
// (collector/mpi/mpi_launcher.h). The variable sets below are what the real
// launchers of Debian 12 put in a rank's environment.
#include "collector/mpi/mpi_launcher.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace corenoise {
namespace {

using Variables = std::map<std::string, std::string>;

// This process is 100, its parent 99: a SLURM_TASK_PID of 100 or 99 is srun
// starting this very task, another is an outer step's, inherited.
constexpr ProcessIds kSelf{100, 99};

Launch detect(const Variables& variables) {
  return detect_launch(
      [&](const char* name) -> const char* {
        const auto found = variables.find(name);
        return found == variables.end() ? nullptr : found->second.c_str();
      },
      kSelf);
}

TEST(MpiLauncher, HydraIsMpich) {
  const Launch launch =
      detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}, {"PMI_FD", "9"}, {"MPI_LOCALRANKID", "1"}});
  ASSERT_TRUE(launch.family.has_value());
  EXPECT_EQ(*launch.family, MpiFamily::mpich);
  EXPECT_EQ(launch.ranks, 4);
  EXPECT_EQ(launch.rank, 1);
  EXPECT_EQ(launch.local_rank, 1);
  EXPECT_NE(launch.evidence.find("PMI_FD=9"), std::string::npos) << launch.evidence;
}

TEST(MpiLauncher, SlurmPmi2IsMpichAndOpenMpisMpirunIsOpenMpi) {
  const Launch pmi2 = detect({{"PMI_FD", "5"},
                              {"PMI_RANK", "0"},
                              {"PMI_SIZE", "2"},
                              {"PMI_JOBID", "2.0"},
                              {"SLURM_STEP_NUM_TASKS", "2"},
                              {"SLURM_PROCID", "0"},
                              {"SLURM_TASK_PID", "100"}});
  EXPECT_EQ(pmi2.family, MpiFamily::mpich);
  EXPECT_EQ(pmi2.ranks, 2);

  const Launch mpirun = detect({{"OMPI_COMM_WORLD_SIZE", "3"},
                                {"OMPI_COMM_WORLD_RANK", "2"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                {"PMIX_RANK", "2"},
                                {"PMIX_NAMESPACE", "prterun-1"}});
  EXPECT_EQ(mpirun.local_rank, 0);
  EXPECT_EQ(mpirun.family, MpiFamily::openmpi);
  EXPECT_EQ(mpirun.ranks, 3);
  EXPECT_EQ(mpirun.rank, 2);
  EXPECT_NE(mpirun.evidence.find("Open MPI's mpirun"), std::string::npos) << mpirun.evidence;
}

TEST(MpiLauncher, SlurmPmixIsOpenMpiSizedBySlurm) {
  const Launch launch = detect({{"PMIX_RANK", "3"},
                                {"PMIX_NAMESPACE", "slurm.pmix.7.0"},
                                {"SLURM_STEP_NUM_TASKS", "8"},
                                {"SLURM_PROCID", "3"},
                                {"SLURM_LOCALID", "1"},
                                {"SLURM_TASK_PID", "99"}});
  EXPECT_EQ(launch.family, MpiFamily::openmpi);
  EXPECT_EQ(launch.ranks, 8);
  EXPECT_EQ(launch.rank, 3);
  EXPECT_EQ(launch.local_rank, 1);
}

// mpiexec.mpich inside `srun --mpi=pmix --pty bash`: the shell's PMIx and
// Slurm variables reach every rank, hydra's fresh PMI_FD decides.
TEST(MpiLauncher, HydraInsideAPmixStepIsMpich) {
  const Launch launch = detect({{"PMI_FD", "7"},
                                {"PMI_RANK", "2"},
                                {"PMI_SIZE", "4"},
                                {"MPI_LOCALRANKID", "2"},
                                {"PMIX_RANK", "0"},
                                {"PMIX_NAMESPACE", "slurm.pmix.9.0"},
                                {"SLURM_STEP_NUM_TASKS", "1"},
                                {"SLURM_LOCALID", "0"},
                                {"SLURM_TASK_PID", "4242"}});
  EXPECT_EQ(launch.family, MpiFamily::mpich);
  EXPECT_EQ(launch.ranks, 4);
  EXPECT_EQ(launch.rank, 2);
  EXPECT_EQ(launch.local_rank, 2);
}

// A lone process in an interactive step: the outer step's PMIx rank and
// size are not this process's launch.
TEST(MpiLauncher, AnOuterStepsVariablesAreNotALaunch) {
  const Launch launch = detect({{"PMIX_RANK", "0"},
                                {"SLURM_STEP_NUM_TASKS", "4"},
                                {"SLURM_PROCID", "0"},
                                {"SLURM_LOCALID", "0"},
                                {"SLURM_TASK_PID", "4242"}});
  EXPECT_FALSE(launch.family.has_value());
  EXPECT_EQ(launch.ranks, 0);
  EXPECT_EQ(launch.local_rank, -1);
}

TEST(MpiLauncher, NoLauncherIsASingletonOfAnyFamily) {
  const Launch launch = detect({{"HOME", "/root"}});
  EXPECT_FALSE(launch.family.has_value());
  EXPECT_EQ(launch.ranks, 0);
  EXPECT_EQ(launch.rank, -1);
  EXPECT_EQ(launch.local_rank, -1);
  EXPECT_TRUE(launch.evidence.empty());
}

// srun --mpi=none starts tasks that cannot find each other: the size Slurm
// announced is kept, so that each task's library, seeing one rank, is
// caught disagreeing.
TEST(MpiLauncher, SrunWithoutPmiKeepsSlurmsSize) {
  const Launch launch =
      detect({{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_TASK_PID", "100"}});
  EXPECT_FALSE(launch.family.has_value());
  EXPECT_EQ(launch.ranks, 2);
  EXPECT_EQ(launch.rank, 1);
  EXPECT_NE(launch.evidence.find("--mpi=none"), std::string::npos) << launch.evidence;
}

TEST(MpiLauncher, CorenoiseMpiOverridesAndKeepsTheLaunchersWord) {
  const Launch launch =
      detect({{"CORENOISE_MPI", "openmpi"}, {"PMI_FD", "9"}, {"PMI_SIZE", "2"}, {"PMI_RANK", "0"}});
  EXPECT_EQ(launch.family, MpiFamily::openmpi);
  EXPECT_EQ(launch.ranks, 2);
  EXPECT_NE(launch.evidence.find("CORENOISE_MPI=openmpi"), std::string::npos) << launch.evidence;
  EXPECT_NE(launch.evidence.find("PMI_FD=9"), std::string::npos) << launch.evidence;
}

TEST(MpiLauncher, EmptyVariablesCountAsUnset) {
  const Launch launch = detect({{"CORENOISE_MPI", ""}, {"PMI_FD", ""}});
  EXPECT_FALSE(launch.family.has_value());
}

TEST(MpiLauncher, AnUnknownFamilyIsAnErrorNamingTheChoices) {
  try {
    detect({{"CORENOISE_MPI", "intel"}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "CORENOISE_MPI=intel: expected mpich or openmpi");
  }
}

TEST(MpiLauncher, MalformedSizesCountAsUnannounced) {
  const Launch launch = detect({{"PMI_FD", "9"}, {"PMI_SIZE", "four"}, {"PMI_RANK", "-1"}});
  EXPECT_EQ(launch.family, MpiFamily::mpich);
  EXPECT_EQ(launch.ranks, 0);
  EXPECT_EQ(launch.rank, -1);
}

TEST(MpiLauncher, FamilyNamesRoundTrip) {
  for (const MpiFamily family : {MpiFamily::mpich, MpiFamily::openmpi}) {
    EXPECT_EQ(parse_family(family_name(family)), family);
  }
  EXPECT_FALSE(parse_family("MPICH").has_value());
}

}  // namespace
}  // namespace corenoise

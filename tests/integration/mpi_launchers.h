// The MPI launchers of this build, by family (collector/mpi/), for tests
// that run the same job under each: Debian's MPICH (hydra's mpiexec.mpich)
// and Open MPI (mpirun.openmpi), each called by its own name, never by the
// mpiexec alternative. CMake passes MPIEXEC_MPICH_BIN and, where Open MPI
// is built for, MPIRUN_OPENMPI_BIN.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "process.h"

namespace corenoise::testing {

struct MpiLauncher {
  std::string family;   // "mpich", "openmpi": CORENOISE_MPI's spelling
  std::string program;  // the launcher's path
  // The start of MPI_Get_library_version's first line under this family.
  std::string library_prefix;
  // MPICH's MPIR_CVAR_NUM_CLIQUES splits one host into fake nodes; Open MPI
  // has no such knob (two nodes need two hosts: tests/tools/netns_sweep.sh).
  bool fakes_nodes = false;

  // The launcher as root may run it, for a shell line: Open MPI's mpirun
  // refuses root unless both variables are set.
  std::string launcher() const {
    if (family == "openmpi") {
      return "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + shell_word(program);
    }
    return shell_word(program);
  }
  // A job of `ranks` ranks on this host, every rank given `env` (" NAME=VALUE"
  // pairs as a list), up to the program to run.
  std::string job(int ranks, const std::vector<std::string>& env = {}) const {
    std::string command = launcher();
    if (family == "openmpi") {
      // No binding, as hydra's default, and more ranks than cores allowed
      // (this machine has 2).
      command += " --oversubscribe --bind-to none";
      for (const auto& pair : env) command += " -x " + pair;
    } else {
      for (const auto& pair : env) {
        const auto eq = pair.find('=');
        command += " -genv " + pair.substr(0, eq) + " " + pair.substr(eq + 1);
      }
    }
    return command + " -n " + std::to_string(ranks) + " ";
  }
  // The same, every rank bound to a core of its own, as an application is
  // launched (and as Open MPI's mpirun binds by default).
  std::string bound_job(int ranks) const {
    const char* bind = family == "openmpi" ? " --bind-to core" : " -bind-to core";
    return launcher() + bind + " -n " + std::to_string(ranks) + " ";
  }
  // `ranks` ranks split into two fake nodes on this host (fakes_nodes only).
  std::string two_node_job(int ranks) const { return job(ranks, {"MPIR_CVAR_NUM_CLIQUES=2"}); }
};

inline std::vector<MpiLauncher> mpi_launchers() {
  std::vector<MpiLauncher> launchers{{"mpich", MPIEXEC_MPICH_BIN, "MPICH Version:", true}};
#ifdef MPIRUN_OPENMPI_BIN
  launchers.push_back({"openmpi", MPIRUN_OPENMPI_BIN, "Open MPI v", false});
#endif
  return launchers;
}

inline std::vector<MpiLauncher> mpi_launchers_that_fake_nodes() {
  std::vector<MpiLauncher> found;
  for (const auto& launcher : mpi_launchers()) {
    if (launcher.fakes_nodes) found.push_back(launcher);
  }
  return found;
}

// gtest's name for a parameter in messages: the family, not its bytes.
inline void PrintTo(const MpiLauncher& launcher, std::ostream* out) { *out << launcher.family; }

// For INSTANTIATE_TEST_SUITE_P: the family as the test's name.
inline std::string launcher_name(const ::testing::TestParamInfo<MpiLauncher>& info) {
  return info.param.family;
}

}  // namespace corenoise::testing

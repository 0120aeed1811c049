// Which MPI family launched this process, read from the environment its
// launcher gives every rank, before any MPI library is loaded: Debian ships
// two families side by side, and an MPICH library started by Open MPI's
// mpirun (or the reverse) runs as N singletons that each report one node.
//
//   evidence, in this order        family    launchers
//   CORENOISE_MPI=mpich|openmpi    as named  (an override)
//   PMI_FD or PMI_PORT             MPICH     mpiexec.mpich (hydra), srun --mpi=pmi2,
//                                            Intel MPI's mpiexec (MPICH's ABI)
//   OMPI_COMM_WORLD_SIZE           Open MPI  mpirun.openmpi
//   PMIX_RANK                      Open MPI  srun --mpi=pmix, prterun
//   PMI_RANK                       MPICH     a PMI-1 launcher without a socket
//   none of them                   either    a singleton (no launcher)
//
// PMI_FD and PMI_PORT come first because they are made afresh for each
// process; the others may be inherited. Inside an interactive `srun
// --mpi=pmix --pty bash`, every rank of an mpiexec.mpich job inherits the
// shell's PMIX_* and SLURM_* variables: Slurm's (PMIX_RANK,
// SLURM_STEP_NUM_TASKS, SLURM_LOCALID) count only when SLURM_TASK_PID is
// this process or its parent, i.e. srun started this very task.
//
// The job's size as the launcher announced it (PMI_SIZE,
// OMPI_COMM_WORLD_SIZE, Slurm's SLURM_STEP_NUM_TASKS) is kept so that a rank
// whose library sees a different size says so instead of sweeping alone.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "collector/mpi/mpi_family.h"

namespace corenoise {

struct Launch {
  // nullopt: no launcher's variables (a singleton), so any family will do.
  std::optional<MpiFamily> family;
  // What told, in words for messages: "OMPI_COMM_WORLD_SIZE=4, set by Open
  // MPI's mpirun"; empty for a singleton.
  std::string evidence;
  // The job's size and this process's rank as the launcher announced them;
  // 0 and -1 where it announced none.
  int ranks = 0;
  int rank = -1;
  // This process's rank within its node (MPI_LOCALRANKID,
  // OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID); -1 where unknown. Lets one
  // rank per node speak when MPI cannot start.
  int local_rank = -1;
};

// getenv's signature, so that tests can pass an environment of their own.
using EnvironmentLookup = std::function<const char*(const char*)>;

// This process's and its parent's ids, against which SLURM_TASK_PID is read.
struct ProcessIds {
  long pid = 0;
  long parent = 0;
};

// Reads the launcher's variables. Throws std::invalid_argument for a
// CORENOISE_MPI that names no family (empty counts as unset).
Launch detect_launch(const EnvironmentLookup& lookup, ProcessIds self);
// The same for this process's environment.
Launch detect_launch();

// This process's rank as any launcher announced it (PMI_RANK,
// OMPI_COMM_WORLD_RANK, PMIX_RANK, SLURM_PROCID), -1 if none: who speaks
// before MPI is open (--help), whatever CORENOISE_MPI says.
int announced_rank();

}  // namespace corenoise

// Which MPI family launched this process, read from the environment its
// launcher gives every rank, before any MPI library is loaded: Debian ships
// two families side by side, and an MPICH library started by Open MPI's
// mpirun (or the reverse) runs as N singletons that each report one node.
//
//   evidence                       family    launchers
//   CORENOISE_MPI=mpich|openmpi    as named  (an override)
//   OMPI_COMM_WORLD_SIZE           Open MPI  mpirun.openmpi
//   PMIX_RANK                      Open MPI  srun --mpi=pmix, prterun
//   PMI_FD, PMI_PORT or PMI_RANK   MPICH     mpiexec.mpich (hydra), srun --mpi=pmi2,
//                                            Intel MPI's mpiexec (MPICH's ABI)
//   none of them                   either    a singleton (no launcher)
//
// The job's size as the launcher announced it (OMPI_COMM_WORLD_SIZE,
// PMI_SIZE, Slurm's SLURM_STEP_NUM_TASKS) is kept so that a rank whose
// library sees a different size says so instead of sweeping alone.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace corenoise {

enum class MpiFamily { mpich, openmpi };

// "mpich", "openmpi": the plugin's and CORENOISE_MPI's spelling.
std::string_view family_name(MpiFamily family);
// The family a CORENOISE_MPI value names; nullopt for anything else.
std::optional<MpiFamily> parse_family(std::string_view name);

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

// Reads the launcher's variables. Throws std::invalid_argument for a
// CORENOISE_MPI that names no family.
Launch detect_launch(const EnvironmentLookup& lookup);

}  // namespace corenoise

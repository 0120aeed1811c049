#include "collector/mpi/mpi_launcher.h"

#include <charconv>
#include <stdexcept>

namespace corenoise {
namespace {

// A non-negative integer variable; nullopt when unset or not a number.
std::optional<int> integer_variable(const EnvironmentLookup& lookup, const char* name) {
  const char* text = lookup(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view value(text);
  int number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size() || number < 0) return std::nullopt;
  return number;
}

bool is_set(const EnvironmentLookup& lookup, const char* name) { return lookup(name) != nullptr; }

std::string evidence(const EnvironmentLookup& lookup, const char* name, const char* launchers) {
  return std::string(name) + "=" + lookup(name) + ", set by " + launchers;
}

// Slurm's size of this job step, for srun without a PMI of either family.
int slurm_step_tasks(const EnvironmentLookup& lookup) {
  if (auto tasks = integer_variable(lookup, "SLURM_STEP_NUM_TASKS")) return *tasks;
  return 0;
}

}  // namespace

std::string_view family_name(MpiFamily family) {
  return family == MpiFamily::mpich ? "mpich" : "openmpi";
}

std::optional<MpiFamily> parse_family(std::string_view name) {
  if (name == "mpich") return MpiFamily::mpich;
  if (name == "openmpi") return MpiFamily::openmpi;
  return std::nullopt;
}

Launch detect_launch(const EnvironmentLookup& lookup) {
  Launch launch;
  if (is_set(lookup, "OMPI_COMM_WORLD_SIZE")) {
    launch.family = MpiFamily::openmpi;
    launch.evidence = evidence(lookup, "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun");
    launch.ranks = integer_variable(lookup, "OMPI_COMM_WORLD_SIZE").value_or(0);
    launch.rank = integer_variable(lookup, "OMPI_COMM_WORLD_RANK").value_or(-1);
  } else if (is_set(lookup, "PMIX_RANK")) {
    launch.family = MpiFamily::openmpi;
    launch.evidence = evidence(lookup, "PMIX_RANK", "a PMIx launcher (srun --mpi=pmix, prterun)");
    launch.ranks = slurm_step_tasks(lookup);
    launch.rank = integer_variable(lookup, "PMIX_RANK").value_or(-1);
  } else if (const char* name = is_set(lookup, "PMI_FD")     ? "PMI_FD"
                                : is_set(lookup, "PMI_PORT") ? "PMI_PORT"
                                : is_set(lookup, "PMI_RANK") ? "PMI_RANK"
                                                             : nullptr) {
    launch.family = MpiFamily::mpich;
    launch.evidence = evidence(lookup, name, "a PMI-1/PMI-2 launcher (mpiexec.mpich, srun --mpi=pmi2)");
    launch.ranks = integer_variable(lookup, "PMI_SIZE").value_or(slurm_step_tasks(lookup));
    launch.rank = integer_variable(lookup, "PMI_RANK").value_or(-1);
  } else {
    // No PMI of either family: a singleton, or srun --mpi=none starting
    // tasks that can never find each other (its size says so).
    launch.ranks = slurm_step_tasks(lookup);
    launch.rank = integer_variable(lookup, "SLURM_PROCID").value_or(-1);
    if (launch.ranks > 1) {
      launch.evidence = evidence(lookup, "SLURM_STEP_NUM_TASKS", "srun with no PMI (--mpi=none)");
    }
  }
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (auto local = integer_variable(lookup, name)) {
      launch.local_rank = *local;
      break;
    }
  }
  if (const char* forced = lookup("CORENOISE_MPI")) {
    launch.family = parse_family(forced);
    if (!launch.family) {
      throw std::invalid_argument(std::string("CORENOISE_MPI=") + forced +
                                  ": expected mpich or openmpi");
    }
    const std::string launcher = launch.evidence.empty() ? "" : "; " + launch.evidence;
    launch.evidence = std::string("CORENOISE_MPI=") + forced + launcher;
  }
  return launch;
}

}  // namespace corenoise

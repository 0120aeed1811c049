#include "collector/mpi/mpi_launcher.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
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

bool is_set(const EnvironmentLookup& lookup, const char* name) {
  const char* value = lookup(name);
  return value != nullptr && *value != '\0';
}

std::string evidence(const EnvironmentLookup& lookup, const char* name, const char* launchers) {
  return std::string(name) + "=" + lookup(name) + ", set by " + launchers;
}

// Whether srun started this very task (or the shell that runs it), rather
// than an outer step whose variables were inherited.
bool slurm_started_this_task(const EnvironmentLookup& lookup, ProcessIds self) {
  const auto task = integer_variable(lookup, "SLURM_TASK_PID");
  return task && (*task == self.pid || *task == self.parent);
}

}  // namespace

Launch detect_launch(const EnvironmentLookup& lookup, ProcessIds self) {
  Launch launch;
  const bool slurm_task = slurm_started_this_task(lookup, self);
  // Slurm's size of this job step, for srun's own tasks only.
  const int step_tasks =
      slurm_task ? integer_variable(lookup, "SLURM_STEP_NUM_TASKS").value_or(0) : 0;
  if (const char* name = is_set(lookup, "PMI_FD")     ? "PMI_FD"
                         : is_set(lookup, "PMI_PORT") ? "PMI_PORT"
                                                      : nullptr) {
    launch.family = MpiFamily::mpich;
    launch.evidence =
        evidence(lookup, name, "a PMI-1/PMI-2 launcher (mpiexec.mpich, srun --mpi=pmi2)");
    launch.ranks = integer_variable(lookup, "PMI_SIZE").value_or(step_tasks);
    launch.rank = integer_variable(lookup, "PMI_RANK").value_or(-1);
  } else if (is_set(lookup, "OMPI_COMM_WORLD_SIZE")) {
    launch.family = MpiFamily::openmpi;
    launch.evidence = evidence(lookup, "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun");
    launch.ranks = integer_variable(lookup, "OMPI_COMM_WORLD_SIZE").value_or(0);
    launch.rank = integer_variable(lookup, "OMPI_COMM_WORLD_RANK").value_or(-1);
  } else if (is_set(lookup, "PMIX_RANK") && (slurm_task || !is_set(lookup, "SLURM_TASK_PID"))) {
    launch.family = MpiFamily::openmpi;
    launch.evidence = evidence(lookup, "PMIX_RANK", "a PMIx launcher (srun --mpi=pmix, prterun)");
    launch.ranks = step_tasks;
    launch.rank = integer_variable(lookup, "PMIX_RANK").value_or(-1);
  } else if (is_set(lookup, "PMI_RANK")) {
    launch.family = MpiFamily::mpich;
    launch.evidence = evidence(lookup, "PMI_RANK", "a PMI-1 launcher");
    launch.ranks = integer_variable(lookup, "PMI_SIZE").value_or(0);
    launch.rank = integer_variable(lookup, "PMI_RANK").value_or(-1);
  } else if (step_tasks > 0) {
    // srun's own task with no PMI of either family: a singleton, or
    // srun --mpi=none starting tasks that can never find each other (its
    // size says so).
    launch.ranks = step_tasks;
    launch.rank = integer_variable(lookup, "SLURM_PROCID").value_or(-1);
    if (launch.ranks > 1) {
      launch.evidence = evidence(lookup, "SLURM_STEP_NUM_TASKS", "srun with no PMI (--mpi=none)");
    }
  }
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (name == std::string_view("SLURM_LOCALID") && !slurm_task) continue;
    if (auto local = integer_variable(lookup, name)) {
      launch.local_rank = *local;
      break;
    }
  }
  if (is_set(lookup, "CORENOISE_MPI")) {
    const char* forced = lookup("CORENOISE_MPI");
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

Launch detect_launch() {
  return detect_launch([](const char* name) { return std::getenv(name); },
                       ProcessIds{static_cast<long>(getpid()), static_cast<long>(getppid())});
}

int announced_rank() {
  const EnvironmentLookup lookup = [](const char* name) { return std::getenv(name); };
  for (const char* name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (is_set(lookup, name)) return integer_variable(lookup, name).value_or(-1);
  }
  return -1;
}

}  // namespace corenoise

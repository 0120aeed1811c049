#include "collector/mpi/mpi_family.h"

namespace corenoise {

std::string_view family_name(MpiFamily family) {
  return family == MpiFamily::mpich ? "mpich" : "openmpi";
}

std::optional<MpiFamily> parse_family(std::string_view name) {
  if (name == "mpich") return MpiFamily::mpich;
  if (name == "openmpi") return MpiFamily::openmpi;
  return std::nullopt;
}

}  // namespace corenoise

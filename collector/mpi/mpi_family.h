// Debian's two MPI families, as corenoise names them (its plugins,
// CORENOISE_MPI, CORENOISE_MPI_FAMILIES).
#pragma once

#include <optional>
#include <string_view>

namespace corenoise {

enum class MpiFamily { mpich, openmpi };

// "mpich", "openmpi".
std::string_view family_name(MpiFamily family);
// The family a name spells; nullopt for anything else.
std::optional<MpiFamily> parse_family(std::string_view name);

}  // namespace corenoise

#include "collector/job/rank/mpi_calls.h"

#include <array>
#include <cstddef>

namespace corenoise {
namespace {

constexpr std::size_t kCalls = static_cast<std::size_t>(MpiCall::count);

constexpr std::array<std::string_view, kCalls> kNames = {
#define CORENOISE_MPI_CALL_NAME(name, role) "MPI_" #name,
    CORENOISE_MPI_CALLS(CORENOISE_MPI_CALL_NAME)
#undef CORENOISE_MPI_CALL_NAME
};

constexpr std::array<MpiCallRole, kCalls> kRoles = {
#define CORENOISE_MPI_CALL_ROLE(name, role) MpiCallRole::role,
    CORENOISE_MPI_CALLS(CORENOISE_MPI_CALL_ROLE)
#undef CORENOISE_MPI_CALL_ROLE
};

}  // namespace

std::string_view mpi_call_name(MpiCall call) {
  const auto index = static_cast<std::size_t>(call);
  return index < kNames.size() ? kNames[index] : "MPI_?";
}

MpiCallRole mpi_call_role(MpiCall call) {
  const auto index = static_cast<std::size_t>(call);
  return index < kRoles.size() ? kRoles[index] : MpiCallRole::exchange;
}

}  // namespace corenoise

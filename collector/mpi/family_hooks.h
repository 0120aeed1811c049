// What differs between the MPI families behind the same MpiEnvironment code
// (library_environment.cpp): each plugin links exactly one of
// family_mpich.cpp and family_openmpi.cpp.
#pragma once

namespace corenoise {

// MPI_Finalize, with whatever way round this family's library needs.
void finalize_family();

}  // namespace corenoise

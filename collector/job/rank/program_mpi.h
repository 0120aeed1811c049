// The MPI library a rank's program brought, found at run time.
//
// The MPICH-family in-job library is linked against no MPI (collector/
// CMakeLists.txt): Intel MPI, MVAPICH and Cray MPICH share MPICH's ABI
// under the soname libmpi.so.12, Debian's MPICH is libmpich.so.12, and a
// library linked against one would load it into a program that uses the
// other (two MPIs in one process) or, where it is absent, stop the program
// from starting. Its MPI_ and PMPI_ references bind lazily, at their first
// call, to whichever library the program loaded.
#pragma once

#include <optional>
#include <string>

namespace corenoise {

// The definition of `name` that this library displaced: the next in the
// global search order or, for a library that the program loaded privately
// (dlopen's RTLD_LOCAL: mpi4py's extension module, an f2py module), which
// RTLD_NEXT cannot see, the first loaded object other than this library
// that defines it. Null when no loaded object does.
void* displaced(const char* name);

// The program's MPI library: the object that defines PMPI_Init. One that
// the program loaded privately is made global (dlopen RTLD_NOLOAD |
// RTLD_GLOBAL: nothing is loaded), so that this library's PMPI_ calls bind
// to it. Called before the program's MPI_Init reaches the library's; empty
// when no loaded object defines PMPI_Init.
std::optional<std::string> bind_program_mpi();

// MPI_Get_library_version's first line, once MPI is initialized.
std::string mpi_library_version();

}  // namespace corenoise

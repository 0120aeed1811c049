// Opens MPI for a cluster command (sweep, collect): finds which family
// launched the process (mpi_launcher.h), loads that family's plugin
// (libcorenoise-mpi-openmpi.so, linked against Open MPI's libmpi, or
// libcorenoise-mpi-mpich.so, linked against none: it binds to the MPICH-ABI
// library loaded before it, $CORENOISE_MPI_LIBRARY, libmpi.so.12 or
// libmpich.so.12) and initialises MPI through it. Nothing else in
// the `corenoise` executable loads an MPI library, so probe, status, inject
// and the rest run where no MPI is installed at all.
//
// Plugins are looked for in $CORENOISE_MPI_PLUGIN_DIR if set, else where
// they are installed relative to the executable (bin/ -> lib/corenoise/,
// from CMAKE_INSTALL_BINDIR and CMAKE_INSTALL_LIBDIR), else in the
// executable's own directory (the build tree).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "collector/mpi/mpi_environment.h"
#include "collector/mpi/mpi_launcher.h"

namespace corenoise {

// MPI initialised, for the family of `launch` (a singleton: the first
// family whose plugin loads, MPICH first). Throws MpiError naming the
// family, the evidence and the remedy when its plugin or library cannot be
// loaded, when MPI fails to start, and when the library sees a job of
// another size than the launcher announced (launcher and library disagree).
std::unique_ptr<MpiEnvironment> open_mpi_environment(const Launch& launch, int* argc = nullptr,
                                                     char*** argv = nullptr);

// The same, for the launch this process's environment describes.
std::unique_ptr<MpiEnvironment> open_mpi_environment(int* argc = nullptr, char*** argv = nullptr);

// Where a per-family library of this build (`file`, e.g.
// libcorenoise-job-openmpi.so) is, searched as the plugins are; nullopt if
// in none of the directories, which `*tried` then lists.
std::optional<std::filesystem::path> find_family_library(const std::string& file,
                                                         std::string* tried);

// "MPICH", "Open MPI": the family as messages name it.
std::string family_title(MpiFamily family);

}  // namespace corenoise

// Stand-ins for an MPI plugin that cannot serve (tests/integration/
// sweep_test.cpp, OneFamilyInstalled and StalePlugin): built once as a
// plugin of another build (an interface hash no corenoise has) and once
// linked to a library that is not there at run time (a family whose libmpi
// is not installed). Neither is ever called: the loader must refuse both.
#include <cstdlib>

#ifdef STUB_NEEDS_MISSING_LIBRARY
extern "C" int corenoise_stub_missing_library_function();
#endif

extern "C" [[gnu::visibility("default")]] const char* corenoise_mpi_plugin_interface() {
  return "another-build";
}

extern "C" [[gnu::visibility("default")]] void* corenoise_mpi_environment_open(int*, char***) {
#ifdef STUB_NEEDS_MISSING_LIBRARY
  corenoise_stub_missing_library_function();
#endif
  std::abort();
}

#include "collector/job/rank/program_mpi.h"

#include <dlfcn.h>
#include <link.h>
#include <mpi.h>

#include <cstddef>

namespace corenoise {

void* displaced(const char* name) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&displaced), &self) == 0) return nullptr;
  struct Search {
    const char* name;
    const void* self_base;
    void* found;
  } search{name, self.dli_fbase, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
        void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        if (handle == nullptr) return 0;
        void* symbol = dlsym(handle, s->name);
        Dl_info where{};
        const bool ours =
            symbol != nullptr && dladdr(symbol, &where) != 0 && where.dli_fbase == s->self_base;
        dlclose(handle);
        if (symbol == nullptr || ours) return 0;
        s->found = symbol;
        return 1;
      },
      &search);
  return search.found;
}

std::optional<std::string> bind_program_mpi() {
  void* init = displaced("PMPI_Init");
  Dl_info where{};
  if (init == nullptr || dladdr(init, &where) == 0 || where.dli_fname == nullptr) {
    return std::nullopt;
  }
  // The main program's own (a statically linked MPI) is global already;
  // the handle is kept, as the promotion's owner.
  if (dlsym(RTLD_DEFAULT, "PMPI_Init") == nullptr && where.dli_fname[0] != '\0') {
    dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL);
  }
  return std::string(where.dli_fname);
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (PMPI_Get_library_version(text, &length) != MPI_SUCCESS) return "";
  // The first line, its runs of blanks as one space ("MPICH Version:\t4.0.2").
  std::string version;
  for (int i = 0; i < length && text[i] != '\0' && text[i] != '\n' && text[i] != '\r'; ++i) {
    const bool blank = text[i] == ' ' || text[i] == '\t';
    if (!blank)
      version += text[i];
    else if (!version.empty() && version.back() != ' ')
      version += ' ';
  }
  if (!version.empty() && version.back() == ' ') version.pop_back();
  return version;
}

}  // namespace corenoise

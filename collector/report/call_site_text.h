// A call site as the job's views show it. The model keeps the linker's
// symbol as dladdr gave it ("libgromacs_mpi.so.8+0x1a2b (_Z13fft5d_execute...)"):
// exact, and what `nm` and `addr2line` take. A person reads the source's
// name, so the views (the banner, the JSON the page draws) show it
// demangled: "libgromacs_mpi.so.8+0x1a2b (fft5d_execute(fft5d_plan_t*, ...))".
//
// Pure. Thread-safety: free functions (__cxa_demangle allocates its own
// buffer per call).
#pragma once

#include <string>
#include <string_view>

namespace corenoise {

// `symbol` as the C++ source spells it, or `symbol` itself where it is not
// an Itanium-mangled name (a C function, a Python line, a name already
// readable).
std::string demangled_symbol(std::string_view symbol);

// `site` with the symbol in its trailing parentheses demangled; any other
// site ("solver.py:88", "other sites", "0x7f3a...") as it is.
std::string readable_site(std::string_view site);

}  // namespace corenoise

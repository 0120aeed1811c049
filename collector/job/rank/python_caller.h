// The Python line that made an MPI call, where the rank is a CPython
// interpreter (mpi4py): its file's base name, line and function, e.g.
// "story.py:74 in main". mpi4py's calls all return into one place of its
// extension module, so without this every comm.Barrier() of a script is
// "MPI.cpython-311-x86_64-linux-gnu.so+0x7159b".
//
// CPython's functions are found at run time (dlsym), from its stable API;
// nothing is linked against Python, and in a program that is not Python
// nothing is found and nothing is done. mpi4py releases the GIL around a
// blocking call, so naming the caller takes the GIL back for a moment:
// callers do it rarely (interval_recorder.h: at a site's calls 1, 2, 4,
// 8, ... and at a new longest wait), never per call.
#pragma once

#include <cstddef>

namespace corenoise {

// Whether this process runs CPython with the functions needed.
bool python_callers_available();

// Writes the innermost Python frame of the calling thread into `out` (NUL
// terminated, truncated to `size`); false, leaving `out` alone, when there
// is none (not Python, not initialised, a thread without Python frames).
bool python_caller(char* out, std::size_t size);

}  // namespace corenoise

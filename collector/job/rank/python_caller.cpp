#include "collector/job/rank/python_caller.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace corenoise {
namespace {

// CPython's stable API, as far as it is used here (Python 3.10 and later).
struct Python {
  using Object = void*;
  int (*is_initialized)() = nullptr;
  int (*gil_ensure)() = nullptr;
  void (*gil_release)(int) = nullptr;
  Object (*current_frame)() = nullptr;  // borrowed
  int (*frame_line)(Object) = nullptr;
  Object (*frame_code)(Object) = nullptr;  // new reference
  Object (*attribute)(Object, const char*) = nullptr;
  const char* (*utf8)(Object, long*) = nullptr;
  void (*decref)(Object) = nullptr;
  void (*clear_error)() = nullptr;

  bool complete() const {
    return is_initialized && gil_ensure && gil_release && current_frame && frame_line &&
           frame_code && attribute && utf8 && decref && clear_error;
  }
};

template <typename F>
void find(F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

const Python& python() {
  static const Python p = [] {
    Python q;
    find(q.is_initialized, "Py_IsInitialized");
    find(q.gil_ensure, "PyGILState_Ensure");
    find(q.gil_release, "PyGILState_Release");
    find(q.current_frame, "PyEval_GetFrame");
    find(q.frame_line, "PyFrame_GetLineNumber");
    find(q.frame_code, "PyFrame_GetCode");
    find(q.attribute, "PyObject_GetAttrString");
    find(q.utf8, "PyUnicode_AsUTF8AndSize");
    find(q.decref, "Py_DecRef");
    find(q.clear_error, "PyErr_Clear");
    return q;
  }();
  return p;
}

// A code object's attribute as text; empty when it has none.
const char* text_of(const Python& p, Python::Object code, const char* name, Python::Object* keep) {
  *keep = p.attribute(code, name);
  if (*keep == nullptr) {
    p.clear_error();
    return "";
  }
  const char* text = p.utf8(*keep, nullptr);
  if (text == nullptr) {
    p.clear_error();
    return "";
  }
  return text;
}

}  // namespace

bool python_callers_available() { return python().complete(); }

bool python_caller(char* out, std::size_t size) {
  const Python& p = python();
  if (!p.complete() || size == 0 || p.is_initialized() == 0) return false;
  const int state = p.gil_ensure();
  bool named = false;
  if (Python::Object frame = p.current_frame()) {
    const int line = p.frame_line(frame);
    if (Python::Object code = p.frame_code(frame)) {
      Python::Object file = nullptr, function = nullptr;
      const char* path = text_of(p, code, "co_filename", &file);
      const char* name = text_of(p, code, "co_name", &function);
      const char* base = std::strrchr(path, '/');
      std::snprintf(out, size, "%s:%d in %s", base != nullptr ? base + 1 : path, line, name);
      named = true;
      if (file != nullptr) p.decref(file);
      if (function != nullptr) p.decref(function);
      p.decref(code);
    }
  }
  p.gil_release(state);
  return named;
}

}  // namespace corenoise

# Turns the call list, mpi_calls.key beside this file, into the C++ that
# wraps those calls, so that the list is written once:
#
#   cmake -DKEY=<mpi_calls.key> -DOUTPUT_DIR=<folder> -P mpi_calls.cmake
#
# writes <folder>/mpi_calls.gen.h, the MpiCall list (CORENOISE_MPI_CALLS:
# enumerator and role, read by mpi_calls.h), and <folder>/pmpi_calls.gen.cpp,
# every C wrapper and its MPI-4 large-count form, each a few lines around
# the class of its kind (pmpi_records.h), and, for the calls the key marks
# `fortran`, the Fortran entry points mpi_NAME_ and (Open MPI) ompi_NAME_f
# around the same kind's Fortran class (pmpi_fortran_records.h).
# collector/CMakeLists.txt runs it whenever the key file or this script
# changes.
#
# Why a key file and a script, not an X-macro table: a prototype written
# once must give both the wrapper's parameters and the arguments it passes
# on, with int in one form and MPI_Count in the other, which the
# preprocessor can do only with variadic-macro machinery no reader wants to
# debug. A CMake script needs nothing but the cmake that builds the project
# (python3 is not there on every build machine), and what it writes is
# plain C++ one can read in the build tree.
#
# It refuses a line it cannot read, an unknown kind, a kind whose
# parameters the prototype does not name, and a call listed twice.

cmake_minimum_required(VERSION 3.25)

if(NOT KEY OR NOT OUTPUT_DIR)
  message(FATAL_ERROR "usage: cmake -DKEY=<mpi_calls.key> -DOUTPUT_DIR=<folder> -P mpi_calls.cmake")
endif()

# What each kind is: its role ("" for a call passed through, which has no
# MpiCall), its class in pmpi_records.h, the parameters that class is made
# from, and the one the wrapper passes on as record.seen (the library's
# status where the program ignores its own).
function(_kind kind role class params seen)
  set(_role_${kind} "${role}" PARENT_SCOPE)
  set(_class_${kind} "${class}" PARENT_SCOPE)
  set(_params_${kind} "${params}" PARENT_SCOPE)
  set(_seen_${kind} "${seen}" PARENT_SCOPE)
endfunction()
_kind(step         collective Step         "comm"                                      "")
_kind(rooted       rooted     Rooted       ""                                          "")
_kind(dest         exchange   ToDest       "comm;dest"                                 "")
_kind(source       exchange   FromSource   "comm;source;status"                        status)
_kind(matched      exchange   Matched      ""                                          "")
_kind(request      exchange   WaitRequest  "request;status"                            status)
_kind(requests     exchange   WaitAll      "count;requests;statuses"                   statuses)
_kind(anyrequest   exchange   WaitAny      "count;requests;index;status"               status)
_kind(somerequests exchange   WaitSome     "count;requests;outcount;indices;statuses"  statuses)
_kind(startsend    ""         StartSend    "request;comm;dest"                         "")
_kind(startreceive ""         StartReceive "request;comm;source"                       "")
_kind(test         ""         Test         "request;flag"                              "")
_kind(testall      ""         TestAll      "count;requests;flag"                       "")
_kind(testany      ""         TestAny      "count;requests;index;flag"                 "")
_kind(testsome     ""         TestSome     "count;requests;outcount;indices"           "")
_kind(free         ""         Free         "request"                                   "")

# A prototype's parameter list in one form: COUNT and DISP as given.
function(_declaration params count disp out)
  string(REGEX REPLACE "(^|[^A-Za-z0-9_])COUNT([^A-Za-z0-9_]|$)" "\\1${count}\\2" params "${params}")
  string(REGEX REPLACE "(^|[^A-Za-z0-9_])DISP([^A-Za-z0-9_]|$)" "\\1${disp}\\2" params "${params}")
  set(${out} "${params}" PARENT_SCOPE)
endfunction()

# What a wrapper makes its kind's class from (`made`: the session, then the
# parameters the kind names) and the arguments it passes on (`passed`:
# `args`, with the kind's status or statuses replaced by record.seen).
function(_made_and_passed kind args made passed)
  set(_made "*session")
  foreach(_p IN LISTS _params_${kind})
    string(APPEND _made ", ${_p}")
  endforeach()
  set(_passed "${args}")
  if(_seen_${kind})
    string(REGEX REPLACE "(^|, )${_seen_${kind}}(,|$)" "\\1record.seen\\2" _passed "${_passed}")
  endif()
  set(${made} "${_made}" PARENT_SCOPE)
  set(${passed} "${_passed}" PARENT_SCOPE)
endfunction()

# One wrapper: `name` is MPI_X (or MPI_X_c), `enumerator` X.
function(_wrapper kind name enumerator declaration args out)
  set(_class corenoise::${_class_${kind}})
  _made_and_passed(${kind} "${args}" _made _passed)
  set(_text "CORENOISE_EXPORT int ${name}(${declaration}) {
  corenoise::JobSession* session = corenoise::recording();
  if (session == nullptr) return P${name}(${args});
")
  if(_role_${kind})
    string(APPEND _text "  ${_class} record(${_made});
  if (!record.active) return P${name}(${args});
  return corenoise::recorded(*session, corenoise::MpiCall::${enumerator}, __builtin_return_address(0),
                             record.step, [&] { return P${name}(${_passed}); }, record);
}
")
  else()
    string(APPEND _text "  ${_class} note(${_made});
  if (!note.active) return P${name}(${args});
  const int result = P${name}(${args});
  if (result == MPI_SUCCESS) note.done();
  return result;
}
")
  endif()
  set(${out} "${_text}" PARENT_SCOPE)
endfunction()

# One Fortran entry point: `symbol` is mpi_x_ or ompi_x_f, `enumerator` X;
# `params` the C prototype's, each passed by reference: a buffer as void*,
# everything else (counts, handles, arrays, statuses, flags) as MPI_Fint*,
# and the error last, in *ierr.
function(_fortran_wrapper kind symbol enumerator params names out)
  set(_declared "")
  set(_types "")
  string(REPLACE "," ";" _each "${params}")
  foreach(_param _name IN ZIP_LISTS _each names)
    if(_param MATCHES "void[ \t]*\\*")
      set(_type "void*")
    else()
      set(_type "MPI_Fint*")
    endif()
    list(APPEND _declared "${_type} ${_name}")
    list(APPEND _types "${_type}")
  endforeach()
  list(APPEND _declared "MPI_Fint* ierr")
  list(APPEND _types "MPI_Fint*")
  list(APPEND names ierr)
  list(JOIN _declared ", " _declared)
  list(JOIN _types ", " _types)
  list(JOIN names ", " _args)
  set(_class corenoise::fortran::${_class_${kind}})
  _made_and_passed(${kind} "${_args}" _made _passed)
  set(_text "CORENOISE_EXPORT void ${symbol}(${_declared}) {
  CORENOISE_FORTRAN_NEXT(\"${symbol}\", (${_types}));
  corenoise::JobSession* session = corenoise::recording();
  if (session == nullptr) return next(${_args});
")
  if(_role_${kind})
    string(APPEND _text "  ${_class} record(${_made});
  if (!record.active) return next(${_args});
  corenoise::recorded(*session, corenoise::MpiCall::${enumerator}, __builtin_return_address(0),
                      record.step, [&] {
                        next(${_passed});
                        return corenoise::fortran::result(ierr);
                      }, record);
}
")
  else()
    string(APPEND _text "  ${_class} note(${_made});
  if (!note.active) return next(${_args});
  next(${_args});
  if (corenoise::fortran::result(ierr) == MPI_SUCCESS) note.done();
}
")
  endif()
  set(${out} "${_text}" PARENT_SCOPE)
endfunction()

file(STRINGS "${KEY}" _lines)
set(_calls "")
set(_wrappers "")
set(_large_count "")
set(_fortran "")
set(_fortran_ompi "")
set(_seen_names "")
set(_number 0)
foreach(_line IN LISTS _lines)
  math(EXPR _number "${_number} + 1")
  if(_line MATCHES "^[ \t]*(#|$)")
    continue()
  endif()
  set(_where "${KEY}:${_number}")
  if(NOT _line MATCHES "^([a-z]+)[ \t]+(c|fortran)[ \t]+int[ \t]+MPI_([A-Za-z_]+)\\(([^()]*)\\)[ \t]*$")
    message(FATAL_ERROR "${_where}: expected '<kind> <c|fortran> int MPI_<Name>(<parameters>)', got: ${_line}")
  endif()
  set(_kind "${CMAKE_MATCH_1}")
  set(_binding "${CMAKE_MATCH_2}")
  set(_enumerator "${CMAKE_MATCH_3}")
  set(_params "${CMAKE_MATCH_4}")
  if(NOT DEFINED _class_${_kind})
    message(FATAL_ERROR "${_where}: unknown kind '${_kind}' (the kinds: mpi_calls.key's header)")
  endif()
  if(_enumerator IN_LIST _seen_names)
    message(FATAL_ERROR "${_where}: MPI_${_enumerator} is listed twice")
  endif()
  list(APPEND _seen_names "${_enumerator}")
  # The parameters' names, passed on in order: the last identifier of each
  # (an array's [] after it).
  string(REPLACE "," ";" _each "${_params}")
  set(_names "")
  foreach(_param IN LISTS _each)
    if(NOT _param MATCHES "([A-Za-z_][A-Za-z0-9_]*)[ \t]*(\\[\\])?[ \t]*$")
      message(FATAL_ERROR "${_where}: cannot read the parameter '${_param}'")
    endif()
    list(APPEND _names "${CMAKE_MATCH_1}")
  endforeach()
  foreach(_needed IN LISTS _params_${_kind})
    if(NOT _needed IN_LIST _names)
      message(FATAL_ERROR "${_where}: kind '${_kind}' needs a parameter named '${_needed}'")
    endif()
  endforeach()
  list(JOIN _names ", " _args)
  if(_role_${_kind})
    string(APPEND _calls "  X(${_enumerator}, ${_role_${_kind}}) \\\n")
  endif()
  _declaration("${_params}" int int _plain)
  _wrapper(${_kind} MPI_${_enumerator} ${_enumerator} "${_plain}" "${_args}" _text)
  string(APPEND _wrappers "\n${_text}")
  if(_params MATCHES "(^|[^A-Za-z0-9_])(COUNT|DISP)([^A-Za-z0-9_]|$)")
    _declaration("${_params}" MPI_Count MPI_Aint _large)
    _wrapper(${_kind} MPI_${_enumerator}_c ${_enumerator} "${_large}" "${_args}" _text)
    string(APPEND _large_count "\n${_text}")
  endif()
  if(_binding STREQUAL "fortran")
    string(TOLOWER "${_enumerator}" _lower)
    _fortran_wrapper(${_kind} mpi_${_lower}_ ${_enumerator} "${_params}" "${_names}" _text)
    string(APPEND _fortran "\n${_text}")
    _fortran_wrapper(${_kind} ompi_${_lower}_f ${_enumerator} "${_params}" "${_names}" _text)
    string(APPEND _fortran_ompi "\n${_text}")
  endif()
endforeach()

set(_banner "// Generated by collector/job/rank/mpi_calls.cmake from collector/job/rank/mpi_calls.key.
// Do not edit: edit the key file; the build regenerates this one.")

set(_header "${_banner}
#pragma once

// X(enumerator, role) for each recorded call, in the key file's order.
#define CORENOISE_MPI_CALLS(X) \\
${_calls}
")

set(_source "${_banner}
#include \"collector/job/rank/pmpi_fortran_records.h\"
#include \"collector/job/rank/pmpi_records.h\"

extern \"C\" {
${_wrappers}
#if MPI_VERSION >= 4
// MPI-4's large-count forms (mpi4py >= 4 calls MPI_Allreduce_c and friends
// whenever the library has them), recorded as the call itself.
${_large_count}
#endif

// The Fortran entry points (mpif.h, `use mpi`): gfortran's and ifort's names.
${_fortran}
#if defined(OPEN_MPI)
// What Open MPI's `use mpi_f08` module calls (pmpi_fortran_records.h).
${_fortran_ompi}
#endif

}  // extern \"C\"
")

# Rewritten only when it changes, so that touching the key file without
# changing what it says recompiles nothing.
function(_write path text)
  if(EXISTS "${path}")
    file(READ "${path}" _old)
    if(_old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()
_write("${OUTPUT_DIR}/mpi_calls.gen.h" "${_header}")
_write("${OUTPUT_DIR}/pmpi_calls.gen.cpp" "${_source}")

# The call list (collector/job/rank/mpi_calls.key) against what the build made
# of it: the in-job library of one family exports a wrapper for every call
# listed, and its _c form for every call whose prototype has COUNT or DISP
# (all of them, or none against an MPI older than MPI-4), and no other C
# MPI_ entry point but the three written by hand; and the Fortran entry
# points of every call the key marks `fortran` (mpi_NAME_, and under Open
# MPI ompi_NAME_f), and no other but Init, Init_thread and Finalize's.
#
#   cmake -DKEY=<mpi_calls.key> -DLIBRARY=<libcorenoise-job-F.so> -DNM=<nm> -P mpi_calls_check.cmake
#
# Also, the generator (collector/job/rank/mpi_calls.cmake) refuses a key file it
# cannot trust, naming the line:
#
#   cmake -DGENERATOR=<mpi_calls.cmake> -DWORK_DIR=<folder> -P mpi_calls_check.cmake
cmake_minimum_required(VERSION 3.25)

if(GENERATOR)
  # Each bad line, and what the refusal must say.
  set(_cases
    "nosuchkind fortran int MPI_Barrier(MPI_Comm comm)|unknown kind 'nosuchkind'"
    "dest c int MPI_Send(const void* buf, COUNT count, MPI_Datatype type, int to, MPI_Comm comm)|needs a parameter named 'dest'"
    "step fortran int MPI_Barrier(MPI_Comm comm)\nstep c int MPI_Barrier(MPI_Comm comm)|MPI_Barrier is listed twice"
    "step fortran MPI_Barrier(MPI_Comm comm)|expected '<kind> <c|fortran> int MPI_<Name>"
    "step int MPI_Barrier(MPI_Comm comm)|expected '<kind> <c|fortran> int MPI_<Name>"
    "step f77 int MPI_Barrier(MPI_Comm comm)|expected '<kind> <c|fortran> int MPI_<Name>")
  set(_index 0)
  foreach(_case IN LISTS _cases)
    # The last | divides the line from the message (which may hold one).
    string(FIND "${_case}" "|" _bar REVERSE)
    string(SUBSTRING "${_case}" 0 ${_bar} _key)
    math(EXPR _bar "${_bar} + 1")
    string(SUBSTRING "${_case}" ${_bar} -1 _expected)
    string(REPLACE "\\n" "\n" _key "${_key}")
    set(_dir "${WORK_DIR}/refused_${_index}")
    file(MAKE_DIRECTORY "${_dir}")
    file(WRITE "${_dir}/bad.key" "# a bad key file\n${_key}\n")
    execute_process(
      COMMAND ${CMAKE_COMMAND} -DKEY=${_dir}/bad.key -DOUTPUT_DIR=${_dir} -P ${GENERATOR}
      RESULT_VARIABLE _result ERROR_VARIABLE _error OUTPUT_QUIET)
    if(_result EQUAL 0)
      message(FATAL_ERROR "the generator accepted: ${_key}")
    endif()
    # CMake wraps a long message: compare with the line breaks as spaces.
    string(REGEX REPLACE "[ \t\n]+" " " _error "${_error}")
    string(FIND "${_error}" "${_expected}" _at)
    string(FIND "${_error}" "bad.key:" _named)
    if(_at EQUAL -1 OR _named EQUAL -1)
      message(FATAL_ERROR "refusing '${_key}', the generator said\n${_error}\nnot the line and '${_expected}'")
    endif()
    math(EXPR _index "${_index} + 1")
  endforeach()
  message(STATUS "the generator refused ${_index} bad key files, naming the line")
  return()
endif()

execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  RESULT_VARIABLE _result OUTPUT_VARIABLE _nm ERROR_VARIABLE _error)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "${NM} ${LIBRARY}: ${_error}")
endif()
# The exported C entry points (the Fortran ones are lower case).
string(REGEX MATCHALL "[ \t]T[ \t]+MPI_[A-Za-z_]+" _found "${_nm}")
list(TRANSFORM _found REPLACE "^[ \t]T[ \t]+" "")

# The Fortran ones: mpi_x_ always, ompi_x_f where the library has any
# (Open MPI's).
string(REGEX MATCHALL "[ \t]T[ \t]+(mpi_[a-z_]+_|ompi_[a-z_]+_f)\n" _found_fortran "${_nm}")
list(TRANSFORM _found_fortran REPLACE "^[ \t]T[ \t]+" "")
list(TRANSFORM _found_fortran STRIP)
set(_ompi FALSE)
if(_found_fortran MATCHES "ompi_")
  set(_ompi TRUE)
endif()

set(_expected MPI_Init MPI_Init_thread MPI_Finalize)
set(_expected_fortran "")
foreach(_lower IN ITEMS init init_thread finalize)
  list(APPEND _expected_fortran mpi_${_lower}_)
  if(_ompi)
    list(APPEND _expected_fortran ompi_${_lower}_f)
  endif()
endforeach()
set(_large "")
file(STRINGS "${KEY}" _lines REGEX "^[a-z]+[ \t]+(c|fortran)[ \t]+int[ \t]+MPI_")
foreach(_line IN LISTS _lines)
  string(REGEX MATCH "MPI_[A-Za-z_]+\\(" _name "${_line}")
  string(REPLACE "(" "" _name "${_name}")
  list(APPEND _expected ${_name})
  if(_line MATCHES "^[a-z]+[ \t]+fortran[ \t]")
    string(TOLOWER "${_name}" _lower)
    string(REGEX REPLACE "^mpi_" "" _lower "${_lower}")
    list(APPEND _expected_fortran mpi_${_lower}_)
    if(_ompi)
      list(APPEND _expected_fortran ompi_${_lower}_f)
    endif()
  endif()
  if(_line MATCHES "[^A-Za-z0-9_](COUNT|DISP)[^A-Za-z0-9_]")
    list(APPEND _large ${_name}_c)
  endif()
endforeach()
set(_some_large FALSE)
foreach(_name IN LISTS _large)
  if(_name IN_LIST _found)
    set(_some_large TRUE)
  endif()
endforeach()
if(_some_large)
  list(APPEND _expected ${_large})
endif()

set(_missing ${_expected} ${_expected_fortran})
list(REMOVE_ITEM _missing ${_found} ${_found_fortran})
set(_extra ${_found} ${_found_fortran})
list(REMOVE_ITEM _extra ${_expected} ${_expected_fortran})
if(_missing OR _extra)
  message(FATAL_ERROR "${LIBRARY} against ${KEY}:\n  not exported: ${_missing}\n  not listed: ${_extra}")
endif()
list(LENGTH _expected _count)
list(LENGTH _expected_fortran _fortran_count)
message(STATUS "${LIBRARY}: the ${_count} C entry points the key file lists (large-count forms: ${_some_large}), "
  "and ${_fortran_count} Fortran ones (Open MPI's ompi_*_f: ${_ompi})")

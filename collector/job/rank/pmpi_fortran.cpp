// The Fortran entry points of MPI_Init, MPI_Init_thread and MPI_Finalize,
// written by hand as the C ones are (pmpi_wrappers.cpp): they start and
// end the session rather than record a call. Every other Fortran entry
// point is generated from mpi_calls.key (pmpi_fortran_records.h says how
// a Fortran binding's arguments are read, and which symbols each family's
// bindings reach).
#include "collector/job/rank/pmpi_fortran_records.h"
#include "collector/job/rank/pmpi_state.h"

extern "C" {

// MPI_Init, MPI_Init_thread and MPI_Finalize, as the C ones do.
#define CORENOISE_FORTRAN_LIFECYCLE(prefix, suffix)                                           \
  CORENOISE_EXPORT void prefix##init##suffix(MPI_Fint* ierr) {                                \
    CORENOISE_FORTRAN_NEXT(#prefix "init" #suffix, (MPI_Fint*));                              \
    const bool measure = corenoise::measure_this_program();                                   \
    next(ierr);                                                                               \
    if (*ierr == MPI_SUCCESS && measure) corenoise::mpi_started();                            \
  }                                                                                           \
  CORENOISE_EXPORT void prefix##init_thread##suffix(MPI_Fint* required, MPI_Fint* provided,   \
                                                    MPI_Fint* ierr) {                         \
    CORENOISE_FORTRAN_NEXT(#prefix "init_thread" #suffix, (MPI_Fint*, MPI_Fint*, MPI_Fint*)); \
    const bool measure = corenoise::measure_this_program();                                   \
    next(required, provided, ierr);                                                           \
    if (*ierr == MPI_SUCCESS && measure) corenoise::mpi_started();                            \
  }                                                                                           \
  CORENOISE_EXPORT void prefix##finalize##suffix(MPI_Fint* ierr) {                            \
    CORENOISE_FORTRAN_NEXT(#prefix "finalize" #suffix, (MPI_Fint*));                          \
    corenoise::before_finalize();                                                             \
    next(ierr);                                                                               \
    corenoise::after_finalize();                                                              \
  }

CORENOISE_FORTRAN_LIFECYCLE(mpi_, _)
#if defined(OPEN_MPI)
CORENOISE_FORTRAN_LIFECYCLE(ompi_, _f)
#endif

}  // extern "C"

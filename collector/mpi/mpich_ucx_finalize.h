// A way round a deadlock in MPI_Finalize of MPICH before 4.2 with its UCX
// netmod (Debian 12 ships MPICH 4.0.2 on UCX 1.13), found with
// tests/tools/netns_sweep.sh and a 10-line MPI program (2 runs in 200 with 2
// ranks on two hosts over TCP, 28 in 100 with 4).
//
// The cause: MPICH's finalize closes every UCX endpoint in flush mode
// (ucp_disconnect_nb), waits for the closes, and then waits in a PMI barrier
// without progressing UCX. A flushing close may need the peer's progress
// (the peer must answer on the shared TCP connection), so a rank whose peer
// finished its closes first and sits in the PMI barrier waits for ever, and
// the peer waits for it in the barrier. MPICH removed that barrier upstream
// (pmodels/mpich#6596, "having the process stuck in PMI_barrier may prevent
// other processes to complete the previous ucp_disconnect_nb"); Debian 12's
// MPICH does not have the change.
//
// The way round: this file, linked into the MPICH plugin
// (libcorenoise-mpi-mpich.so) and the MPICH in-job library
// (libcorenoise-job-mpich.so, collector/job/rank/family_finalize.h), defines
// ucp_disconnect_nb. libmpich binds to it before libucp's, since the plugin
// comes first in the search order of the libraries loaded with it, and the
// in-job library, preloaded, before every library (its one call site is
// that finalize). While armed (from just before
// MPI_Finalize, on the affected MPICH only) it leaves the endpoint open and reports the close done;
// MPICH then destroys the UCX worker, which releases every endpoint without a flush. What the
// skipped flush would still have pushed out is a message handed to UCX but not yet to the kernel (a
// full socket buffer); MpiEnvironment::finalize (and the in-job library, after its reduction)
// barriers first, so that every rank has received every other rank's last messages before any
// endpoint is left unflushed,
// and the PMI barrier keeps every worker alive until all ranks reach it. At
// any other time, and with any other MPI, the call goes to UCX's own
// ucp_disconnect_nb.
#pragma once

#include <string_view>

namespace corenoise {

// Whether the MPI library that `MPI_Get_library_version` describes has the
// deadlock: MPICH older than 4.2 with the ch4:ucx device.
bool mpi_finalize_needs_unflushed_disconnect(std::string_view library_version);

// Arms (or disarms) the way round for the MPI_Finalize about to be called.
void set_unflushed_ucx_disconnect(bool armed);

}  // namespace corenoise

// UCX's `ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h)`, with its pointer
// types as void* so that building needs no UCX headers.
extern "C" void* ucp_disconnect_nb(void* ep);

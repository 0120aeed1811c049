// The exchange of the point-to-point charges at MPI_Finalize
// (peer_waits.h): each rank learns what every rank charged it from the
// ranks that charged it only. A rank of a halo code charges its few
// neighbours, so a job's traffic grows with the ranks, where a dense
// all-to-all of one double per pair grows with their square (10^10
// doubles at 100,000 ranks).
//
// NBX (Hoefler, Siebert, Lumsdaine, "Scalable communication protocols for
// dynamic sparse data exchange", PPoPP 2010): a rank sends each nonzero
// charge in a synchronous send, which completes only once its peer has
// received it; it receives whatever comes while it waits; once its own
// sends are all received it enters a nonblocking barrier, and once every
// rank has entered it, every charge of the job has been received.
//
// Only the traffic is sparse: the tables, `charged` and the result, stay
// dense, one double per rank of the job on every rank (PeerWaits).
//
// Compiled per family, with that family's <mpi.h>; PMPI_ calls only (the
// in-job library must not see its own traffic). Not thread-safe: one
// thread per exchange, as MPI's probe-then-receive needs.
#pragma once

#include <mpi.h>

#include <span>

#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

// Into `waited_for_me[i]` what rank i of `comm` charged this rank
// (`charged[this rank]` on rank i), +0.0 where it charged nothing: the
// table a dense MPI_Alltoall of `charged` gives, bit for bit. Every rank
// of `comm` calls it, with spans of the communicator's size.
//
// True once every rank's charges came. False when `deadline` passed or an
// MPI call failed (a peer's process is gone): then a send, a receive or
// the barrier may stay pending, which MPI may still complete, so
// `charged` and `waited_for_me` must outlive the job's MPI, and no
// collective may follow on `comm` (this rank's barrier matches no one's,
// or another rank's matches none of this one's).
//
// `tag` is the exchange's own on `comm`, and two consecutive exchanges on
// one communicator take different tags: a rank done with one may send the
// next one's charges to a rank still receiving this one's.
bool exchange_charges(MPI_Comm comm, int tag, std::span<const double> charged,
                      std::span<double> waited_for_me, MpiDeadline deadline);

}  // namespace corenoise

// The MPI layer as the rest of corenoise sees it: start-up and shut-down of
// MPI, grouping of ranks into nodes, the collectives the commands need, and a
// watchdog that aborts the whole job instead of hanging.
//
// An interface, implemented once per MPI family by a plugin
// (library_environment.cpp built as libcorenoise-mpi-mpich.so and
// libcorenoise-mpi-openmpi.so) and opened by mpi_library.h for the family
// that launched the process. No MPI type appears here: only the plugins
// include <mpi.h>, so the `corenoise` executable, the rest of the project and
// its tests build and run without MPI, and never hold an MPI handle whose
// lifetime could outlive MPI_Finalize.
//
// Nodes: ranks are grouped with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED),
// i.e. by what the MPI library considers one shared-memory domain, never by
// hostname (containers, aliases and MPICH's MPIR_CVAR_NUM_CLIQUES fake nodes
// all make hostnames a wrong key). The lowest world rank of each node is its
// leader; leaders are numbered 0..node_count-1 in world-rank order, so world
// rank 0 is always the leader of node 0.
//
// Thread safety: an MpiEnvironment must be created, used and destroyed on the
// process's main thread (MPI_THREAD_FUNNELED); no method may be called from
// another thread. The watchdog thread is internal and only ever calls
// MPI_Abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace corenoise {

// A failed MPI call: what() names the call and carries MPI_Error_string.
// (Visibility default: thrown inside the plugins, which hide everything
// else, and caught by the executable.)
class [[gnu::visibility("default")]] MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The MPI library sees a job of another size than the launcher announced
// (mpi_library.h): every rank of the job fails the same way.
class [[gnu::visibility("default")]] MpiLaunchMismatch : public MpiError {
 public:
  using MpiError::MpiError;
};

// Merges `records` consecutive fixed-size records of `in` into `inout`
// (inout[i] = in[i] (op) inout[i]). It may be called several times per
// reduction on parts of the buffer, so it must work for any record count.
using RecordMerge = std::function<void(const std::byte* in, std::byte* inout, std::size_t records)>;

class [[gnu::visibility("default")]] MpiEnvironment {
 public:
  // Opened by open_mpi_environment (mpi_library.h). Destruction cancels the
  // watchdog, frees the communicators and calls MPI_Finalize (unless
  // finalize() did).
  virtual ~MpiEnvironment() = default;
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  // Cancels the watchdog, frees the communicators and calls MPI_Finalize;
  // if that has not returned within `seconds`, prints why and ends the
  // process with `exit_code`. MPICH before 4.2 on UCX (Debian 12's 4.0.2)
  // deadlocks in MPI_Finalize unless mpich_ucx_finalize.h's way round is
  // armed, as the MPICH plugin does; the deadline is the last resort for any
  // other hang after the outputs are written, so that the job ends with its
  // status rather than hangs. Collective.
  virtual void finalize(double seconds, int exit_code) = 0;

  int world_rank() const { return layout_.world_rank; }
  int world_size() const { return layout_.world_size; }
  // This rank's rank and the number of ranks within its node.
  int node_rank() const { return layout_.node_rank; }
  int node_size() const { return layout_.node_size; }
  // Index of this rank's node, 0..node_count()-1, known to every rank.
  int node_index() const { return layout_.node_index; }
  int node_count() const { return layout_.node_count; }
  // The node's lowest world rank; the only rank allowed in leader collectives.
  bool is_leader() const { return layout_.node_rank == 0; }
  // The thread level MPI provided (an MPI_THREAD_* value), for --verbose.
  int thread_level() const { return layout_.thread_level; }
  // MPI_Get_library_version's first line ("MPICH Version: 4.0.2",
  // "Open MPI v4.1.4, ..."), for --verbose and error messages.
  const std::string& library_version() const { return layout_.library_version; }

  // Payload bytes this rank contributed to collectives so far (what it sent
  // as its own input, not the algorithm's wire traffic), for --verbose.
  std::uint64_t bytes_sent() const { return bytes_sent_; }

  // Collective over every rank. Waiting ranks sleep (1 ms polls) instead of
  // spinning, so that ranks with nothing to do leave their cores to the
  // ones being measured.
  virtual void barrier_world() = 0;

  // --- Node collectives: every rank of the node, in the same order. Waits
  // sleep as in barrier_world. ---

  virtual void barrier_node() = 0;
  // The node leader's `blob` replaces `blob` on the node's other ranks.
  virtual void broadcast_node(std::vector<std::byte> & blob) = 0;
  // The node leader gets one blob per node rank, in node-rank order (sizes
  // may differ); the other ranks get an empty vector.
  virtual std::vector<std::vector<std::byte>> gather_node_blobs(
      std::span<const std::byte> blob) = 0;
  // `bytes` of memory every rank of the node maps (MPI_Win_allocate_shared),
  // zeroed, aligned for any atomic (64 bytes where the ranks map it alike);
  // valid until the environment is destroyed.
  virtual std::span<std::byte> node_shared_memory(std::size_t bytes) = 0;

  // --- Leader collectives: every leader must call them, in the same order,
  // with the same sizes; a non-leader calling one gets std::logic_error. ---

  // A roll call: each leader reports to leader 0 by a message of its own and
  // leader 0 answers them all. Unlike an MPI_Barrier, leader 0 knows which
  // leaders it is still waiting for, and so does its watchdog's message
  // ("waiting for node 1 (cn-node2)"): a node cut off from the job is named,
  // not just the rank that timed out.
  virtual void barrier_leaders() = 0;

  // True on every leader if `failed` is true on any; a roll call as
  // barrier_leaders, so that the node that never answers is the one named.
  virtual bool any_leader_failed(bool failed) = 0;

  // A wall-clock instant, in unix seconds, common to all leaders: leader 0
  // takes now + margin_seconds and broadcasts it. The margin must cover the
  // broadcast's latency so that every leader receives it before it passes.
  virtual double common_start_time(double margin_seconds) = 0;

  // Element-wise reductions in place; every leader gets the result.
  virtual void allreduce_sum(std::span<double> values) = 0;
  virtual void allreduce_min(std::span<double> values) = 0;
  virtual void allreduce_max(std::span<double> values) = 0;
  virtual void allreduce_sum(std::span<std::uint64_t> values) = 0;
  virtual void allreduce_min(std::span<std::uint64_t> values) = 0;
  virtual void allreduce_max(std::span<std::uint64_t> values) = 0;

  // Element-wise reduction of `data.size() / record_size` records with
  // `merge`, in place; every leader gets the result. Pass commutative = true
  // only if merge(a, b) == merge(b, a): MPI may then reorder operands; if
  // false, the result is x0 (op) x1 (op) ... in node-index order.
  virtual void allreduce_records(std::span<std::byte> data, std::size_t record_size,
                                 const RecordMerge& merge, bool commutative) = 0;

  // Leader 0 gets every leader's `record` (all the same size) concatenated in
  // node-index order; other leaders get an empty vector.
  virtual std::vector<std::byte> gather_records(std::span<const std::byte> record) = 0;

  // Leader 0 gets one blob per node, in node-index order (sizes may differ;
  // the total must stay under 2 GiB); other leaders get an empty vector.
  virtual std::vector<std::vector<std::byte>> gather_blobs(std::span<const std::byte> blob) = 0;

  // Leader 0's `blob` replaces `blob` on every other leader.
  virtual void broadcast(std::vector<std::byte> & blob) = 0;

  // --- Watchdog ---

  // Starts (or restarts) a deadline: unless cancel_watchdog() is called
  // within `seconds`, a background thread prints
  //   corenoise: <what> did not finish within N s on rank R (node I)[, waiting
  //   for node J (HOST), ...]; aborting the job
  // to stderr and calls MPI_Abort(MPI_COMM_WORLD, 1), which ends every rank
  // of the job. Leader 0 names the leaders a roll call is still waiting for,
  // by their MPI_Get_processor_name; the other ranks' deadlines are a
  // second later, so that leader 0 speaks first. seconds <= 0 disables it.
  virtual void start_watchdog(double seconds, const std::string& what) = 0;
  virtual void cancel_watchdog() = 0;

 protected:
  MpiEnvironment() = default;

  // Where this rank sits, filled in once by the implementation at start-up.
  struct Layout {
    int world_rank = 0;
    int world_size = 1;
    int node_rank = 0;
    int node_size = 1;
    int node_index = 0;
    int node_count = 1;
    int thread_level = 0;
    std::string library_version;
  };
  Layout layout_;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace corenoise

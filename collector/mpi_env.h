// The MPI layer of the `corenoise` command: start-up and shut-down of MPI,
// grouping of ranks into nodes, the collectives the commands need, and a
// watchdog that aborts the whole job instead of hanging.
//
// No MPI type appears here: only mpi_env.cpp includes <mpi.h>, so the rest of
// the project (and its tests) build without MPI headers and never hold an MPI
// handle whose lifetime could outlive MPI_Finalize.
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

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace corenoise {

// A failed MPI call: what() names the call and carries MPI_Error_string.
class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Merges `records` consecutive fixed-size records of `in` into `inout`
// (inout[i] = in[i] (op) inout[i]). It may be called several times per
// reduction on parts of the buffer, so it must work for any record count.
using RecordMerge = std::function<void(const std::byte* in, std::byte* inout, std::size_t records)>;

class MpiEnvironment {
 public:
  // Calls MPI_Init_thread (works without mpiexec as a singleton: 1 rank,
  // 1 node) and builds the node and leader communicators. Throws MpiError on
  // failure and std::logic_error if MPI is already initialized (one
  // environment per process).
  MpiEnvironment(int* argc, char*** argv);
  MpiEnvironment();
  // Cancels the watchdog, frees the communicators and calls MPI_Finalize
  // (unless finalize() did).
  ~MpiEnvironment();

  // Cancels the watchdog, frees the communicators and calls MPI_Finalize;
  // if that has not returned within `seconds`, prints why and ends the
  // process with `exit_code`. MPICH before 4.2 on UCX (Debian 12's 4.0.2)
  // deadlocks in MPI_Finalize unless collector/mpich_ucx_finalize.h's way
  // round is armed, as it is here; the deadline is the last resort for any
  // other hang after the outputs are written, so that the job ends with its
  // status rather than hangs. Collective.
  void finalize(double seconds, int exit_code);
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  // This rank's rank and the number of ranks within its node.
  int node_rank() const { return node_rank_; }
  int node_size() const { return node_size_; }
  // Index of this rank's node, 0..node_count()-1, known to every rank.
  int node_index() const { return node_index_; }
  int node_count() const { return node_count_; }
  // The node's lowest world rank; the only rank allowed in leader collectives.
  bool is_leader() const { return node_rank_ == 0; }
  // The thread level MPI provided (an MPI_THREAD_* value), for --verbose.
  int thread_level() const { return thread_level_; }

  // Payload bytes this rank contributed to collectives so far (what it sent
  // as its own input, not the algorithm's wire traffic), for --verbose.
  std::uint64_t bytes_sent() const { return bytes_sent_; }

  // Collective over every rank. Waiting ranks sleep (1 ms polls) instead of
  // spinning, so that ranks with nothing to do leave their cores to the
  // ones being measured.
  void barrier_world();

  // --- Node collectives: every rank of the node, in the same order. Waits
  // sleep as in barrier_world. ---

  void barrier_node();
  // The node leader's `blob` replaces `blob` on the node's other ranks.
  void broadcast_node(std::vector<std::byte>& blob);
  // The node leader gets one blob per node rank, in node-rank order (sizes
  // may differ); the other ranks get an empty vector.
  std::vector<std::vector<std::byte>> gather_node_blobs(std::span<const std::byte> blob);
  // `bytes` of memory every rank of the node maps (MPI_Win_allocate_shared),
  // zeroed, aligned for any atomic (64 bytes where the ranks map it alike);
  // valid until the environment is destroyed.
  std::span<std::byte> node_shared_memory(std::size_t bytes);

  // --- Leader collectives: every leader must call them, in the same order,
  // with the same sizes; a non-leader calling one gets std::logic_error. ---

  void barrier_leaders();

  // A wall-clock instant, in unix seconds, common to all leaders: leader 0
  // takes now + margin_seconds and broadcasts it. The margin must cover the
  // broadcast's latency so that every leader receives it before it passes.
  double common_start_time(double margin_seconds);

  // Element-wise reductions in place; every leader gets the result.
  void allreduce_sum(std::span<double> values);
  void allreduce_min(std::span<double> values);
  void allreduce_max(std::span<double> values);
  void allreduce_sum(std::span<std::uint64_t> values);
  void allreduce_min(std::span<std::uint64_t> values);
  void allreduce_max(std::span<std::uint64_t> values);

  // Element-wise reduction of `data.size() / record_size` records with
  // `merge`, in place; every leader gets the result. Pass commutative = true
  // only if merge(a, b) == merge(b, a): MPI may then reorder operands; if
  // false, the result is x0 (op) x1 (op) ... in node-index order.
  void allreduce_records(std::span<std::byte> data, std::size_t record_size,
                         const RecordMerge& merge, bool commutative);

  // Leader 0 gets every leader's `record` (all the same size) concatenated in
  // node-index order; other leaders get an empty vector.
  std::vector<std::byte> gather_records(std::span<const std::byte> record);

  // Leader 0 gets one blob per node, in node-index order (sizes may differ;
  // the total must stay under 2 GiB); other leaders get an empty vector.
  std::vector<std::vector<std::byte>> gather_blobs(std::span<const std::byte> blob);

  // Leader 0's `blob` replaces `blob` on every other leader.
  void broadcast(std::vector<std::byte>& blob);

  // --- Watchdog ---

  // Starts (or restarts) a deadline: unless cancel_watchdog() is called
  // within `seconds`, a background thread prints
  //   corenoise: <what> did not finish within N s on rank R (node I); aborting the job
  // to stderr and calls MPI_Abort(MPI_COMM_WORLD, 1), which ends every rank
  // of the job. seconds <= 0 disables it.
  void start_watchdog(double seconds, const std::string& what);
  void cancel_watchdog();

 private:
  void init();
  void free_communicators();
  void require_leader(const char* what) const;
  void watchdog_main(double seconds, std::string what);

  int world_rank_ = 0;
  int world_size_ = 1;
  int node_rank_ = 0;
  int node_size_ = 1;
  int node_index_ = 0;
  int node_count_ = 1;
  int thread_level_ = 0;
  std::uint64_t bytes_sent_ = 0;

  // Opaque communicator handles (MPI_Comm stored behind a pointer to an
  // implementation struct so that this header needs no <mpi.h>).
  struct Comms;
  std::unique_ptr<Comms> comms_;

  // Watchdog state: guarded by watchdog_mutex_.
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_cv_;
  bool watchdog_cancelled_ = false;
  std::thread watchdog_;
};

}  // namespace corenoise

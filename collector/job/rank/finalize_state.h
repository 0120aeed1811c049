// What the steps of MPI_Finalize's reduction share (job_reduction.cpp,
// record_collection.cpp): one communicator's collectives, posted in the
// same order on every rank and abandoned together at one deadline, and
// the buffers MPI may still write after an operation was abandoned.
// Compiled per family.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "collector/job/model/live_window.h"
#include "collector/job/model/rank_summary.h"
#include "collector/job/rank/frozen_session.h"
#include "collector/job/rank/pmpi_completion.h"
#include "collector/job/rank/tree_gather.h"
#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

struct JobProcess;  // job_mpi.h

// What one reduction reads of this rank: its place in the job, the
// communicators it reduces on (its own: a live epoch's operations must not
// match the final reduction's), and its figures frozen when it began.
struct RankView {
  int rank = 0, size = 1, node_rank = 0;
  MPI_Comm comm = MPI_COMM_NULL, node = MPI_COMM_NULL;
  const FrozenSession* session = nullptr;
  const JobProcess* process = nullptr;  // the node's tasks at start, the MPI library
  // A live epoch: the ranks froze their figures at different steps, and the
  // steps every rank had finished are compared; the node's daemon is not
  // handed a loss (the final reduction does, once).
  bool live = false;
  long epoch = 0;  // a live epoch's number, from 1
  // A live epoch's: the previous epoch's measures, its window's start
  // (live_window.h); kept by the live reduction from one epoch to the next.
  LiveBaseline* baseline = nullptr;
};

// Tags on the library's own communicator.
inline constexpr int kRecordTag = 7411;
inline constexpr int kChargeTag = 7412;   // the exchange of charges (sparse_charges.h)
inline constexpr int kSummaryTag = 7413;  // a summary sent point to point (record_collection.h)
inline constexpr int kNodeTag = 7414;     // a node's digest, to rank 0 (record_collection.h)
// The trees (tree_gather.h), one tag each: a child already in the next
// tree must not be taken for one of this tree's.
inline constexpr int kSummaryTreeTag = 7415;  // the summaries, on the world
inline constexpr int kPidTreeTag = 7416;      // the node's pids, on the node
inline constexpr int kRecordTreeTag = 7417;   // the node's records, on the node

// One communicator's collectives at MPI_Finalize. MPI matches collectives by
// their order alone, so every rank must post the same sequence. A rank whose
// deadline passed on one (a rank is gone, or more than the timeout late)
// posts no more on that communicator: every rank's sequence is then a prefix
// of one sequence, and a rank that comes late never has its reduction
// matched with another rank's broadcast; it waits out its own deadline.
class Collectives {
 public:
  explicit Collectives(MPI_Comm comm) : comm_(comm) {}
  MPI_Comm comm() const { return comm_; }
  bool open() const { return open_; }
  void close() { open_ = false; }
  // No operation of this communicator is left pending: its buffers may be
  // freed and the communicator with them.
  bool settled() const { return pending_ == 0; }
  // An operation posted outside post(), a collective among them (the
  // exchange of charges' barrier, sparse_charges.h), was left pending:
  // closed, and not settled.
  void abandon() {
    open_ = false;
    ++pending_;
  }
  // A tree gather on this communicator (tree_gather.h), run when open:
  // one left pending leaves it unsettled, one not complete closes it.
  bool account(const TreeGathered& gathered) {
    if (gathered.pending) abandon();
    if (!gathered.complete) open_ = false;
    return open_;
  }
  // Posts one collective, `post(comm, &request)` returning the MPI call's
  // code, unless closed. False, and closed, if the call failed: the next
  // one must not be posted either, or it would match the others' previous.
  template <class Post>
  bool post(Post&& post, MPI_Request& request) {
    if (!open_) return false;
    if (post(comm_, &request) != MPI_SUCCESS) {
      open_ = false;
      return false;
    }
    ++pending_;
    return true;
  }
  // Waits for a posted collective until `deadline`. False, and closed, if
  // it did not complete (it stays pending) or the communicator was closed.
  bool finish(MPI_Request& request, MpiDeadline deadline) {
    open_ = open_ && pmpi_complete(request, deadline);
    if (open_) --pending_;
    return open_;
  }

 private:
  MPI_Comm comm_;
  bool open_ = true;
  int pending_ = 0;  // posted, not seen to complete
};

// Every buffer that finish_job's collectives and its sends and receives
// read or write. A collective abandoned at the deadline may still complete
// later, inside the program's MPI_Finalize, and write its result (Open
// MPI's does): its buffers must outlive finish_job. They live here, and
// buffers whose operations did not all complete are kept, never freed
// (JobProcess::kept).
struct FinalizeBuffers {
  FrozenSession frozen;  // the rank's figures reduced (RankView::session)
  struct ValueRank {     // MPI_DOUBLE_INT
    double value;
    int rank;
  };
  long shape[4] = {}, low[4] = {}, high[4] = {};
  std::vector<ValueRank> mine, minimum;
  std::vector<double> sum, maximum;
  // Each bin's wait but its last arriver's (infinite for that rank), and on
  // rank 0 the least of them: the next-to-last's (step_math.h's savings).
  std::vector<double> others, second;
  std::vector<double> waited_for_me;
  long pid = 0;
  std::vector<long> pids;
  // The node's lateness row: the column count, then the columns
  // (kMaxLatenessColumns), this rank's and, on the node's first rank, the
  // latest of each over the node.
  std::vector<float> lateness_mine, lateness_node;
  int refused = 0;          // 1 if corenoised did not take this rank's report
  int refused_on_node = 0;  // on the node's first rank: how many of the node's it did not
  RankSummary summary;      // this rank's, to rank 0
  std::vector<RankSummary> summaries;             // on rank 0, every rank's
  TreeBuffers pid_tree, summary_tree, node_tree;  // the gathers' (tree_gather.h)
  int asked_count = 0;                            // from rank 0: how many ranks it asks for records
  std::vector<int> asked;                         // and which, ascending
  std::string record;                             // this rank's, sent to rank 0
  std::string digest;                             // on a node's first, its node's digest to rank 0
  std::string incoming;                           // on rank 0, the record being received
  std::vector<double> reference;
};

}  // namespace corenoise

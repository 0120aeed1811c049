// What rank 0 collects at MPI_Finalize: every rank's summary (a fixed
// block, rank_summary.h), then the records of the ranks its report shows
// in full (job_selection.h). Above `full` ranks, each node's first rank
// first receives its node's records and sends rank 0 their digest
// (node_digest.h). Rank 0 thus holds a block per rank, a digest per node
// and a record per rank it names, not a record per rank (docs/scaling.md).
//
// Once every rank came (the job's steps were reduced), the summaries go up
// a binomial tree (tree_gather.h) and who is asked for a record is
// broadcast, and the asked ranks send their records point to point; a
// subtree that did not come sends every rank down the point-to-point path. When a
// rank is missing no collective can complete: each rank sends its summary
// point to point, and its record in a job of at most `full` ranks (above,
// only the nodes' digests come), since rank 0 cannot judge ranks whose
// lateness was not reduced. Rank 0 takes what comes by the
// deadline, and lists the ranks that did not come. Compiled per family.
#pragma once

#include <map>
#include <vector>

#include "collector/job/model/node_digest.h"
#include "collector/job/model/rank_record.h"
#include "collector/job/model/rank_summary.h"
#include "collector/job/rank/finalize_state.h"
#include "collector/job/rank/job_mpi.h"

namespace corenoise {

// What rank 0 holds once the others' summaries and records came or the
// deadline passed; empty on the other ranks.
struct GatheredRecords {
  std::vector<RankSummary> summaries;        // every rank's that came, in rank order
  std::vector<RankRecord> records;           // the ranks in full, in rank order
  std::vector<std::vector<float>> lateness;  // their lateness rows, in the same order
  std::map<int, NodeDigest> node_digests;    // by the node's first rank, above `full` ranks
  // Ranks whose summary did not come (or did not parse), and ranks asked
  // for a record that did not come.
  std::vector<int> missing;
};

// What moved: rank 0's gathered records, whether this rank sent what it
// had to (always true on rank 0) and whether a send or receive is left
// that MPI may still touch.
struct RecordsMoved {
  GatheredRecords gathered;
  bool sent = true;
  bool pending = false;
};

// `lateness`: this rank's row; `node_lateness`: its node's, on the node's
// first rank above `full` ranks (empty elsewhere).
RecordsMoved move_records(const RankView& p, Collectives& world, FinalizeBuffers& b,
                          const RankRecord& record, const std::vector<float>& lateness,
                          const std::vector<float>& node_lateness, MpiDeadline deadline);

}  // namespace corenoise

// A rank's figures as they stood at one moment, for one reduction of the
// job (job_reduction.cpp): at MPI_Finalize once the session closed, or at
// the start of a live epoch (live_reduction.h) while the program runs on
// and the session keeps recording. The reduction's MPI operations read and
// write these copies, never the session's own tables, which a later call
// may grow or merge under an operation in flight. Copies: the step bins
// (up to kMaxStepBins), the call-site table and the charges per rank, a
// few hundred KB a rank at the most.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collector/job/model/job_options.h"
#include "collector/job/model/rank_measures.h"
#include "collector/job/rank/interval_recorder.h"
#include "collector/job/rank/peer_waits.h"
#include "collector/job/rank/proc_sampler.h"

namespace corenoise {

struct FrozenSession {
  const JobOptions* options = nullptr;  // the session's, which outlives it
  IntervalRecorder recorder{0, 0, 2};   // IntervalRecorder::frozen()
  PeerWaits peers;
  RankMeasures measures;
  // At the end of steps 1, 2, 4, ... (JobSession::measures_at_step).
  std::vector<RankMeasures> step_snapshots;
  std::vector<OwnThread> threads;
  int peak_busy_threads = 0;
  std::vector<unsigned> cpus;
  double started_unix_seconds = 0;
  double started_seconds = 0;  // the call clock's origin (JobSession::started_seconds)
  std::string clock_source;

  const RankMeasures* measures_at_step(long steps) const {
    for (std::size_t i = 0; i < step_snapshots.size(); ++i) {
      if (1L << i == steps) return &step_snapshots[i];
    }
    return nullptr;
  }
};

}  // namespace corenoise

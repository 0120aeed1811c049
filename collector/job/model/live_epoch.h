// Rank 0's part of a live epoch (rank/live_reduction.h), kept in the spill
// folder as kLiveEpochFile (spill_layout.h): the epoch's facts and the
// records of the ranks its report showed in full. With every rank's summary
// of the same epoch, each in its own spill file (SpillHeader::epochs), it
// is all build_job_report needs: `corenoise job --report` rebuilds the
// epoch's report from both (rebuild/spill_report.h), equal to the live one
// but for saying that the job ended without MPI_Finalize.
//
// JSON, read as untrusted: a malformed file throws, and the report is
// rebuilt from the spill files alone. Doubles and floats round-trip
// exactly (nlohmann writes the digits that read back the same value).
#pragma once

#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/model/rank_record.h"

namespace corenoise {

struct LiveEpoch {
  JobFacts facts;  // facts.live holds the epoch
  std::vector<RankRecord> records;
};

std::string live_epoch_text(const JobFacts& facts, const std::vector<RankRecord>& records);
// Throws std::invalid_argument, or nlohmann's errors, for what
// live_epoch_text cannot have written.
LiveEpoch live_epoch_from_text(const std::string& text);

}  // namespace corenoise

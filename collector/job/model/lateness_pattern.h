// Chronic or one-off: when a late rank was late over the job, from its
// lateness row (step_math.h's lateness_columns: per column of steps, the
// seconds it arrived after the first). A rank's one bad minute is not a
// chronic culprit, and a rank that became late an hour in says when.
//
// A column is late where the rank's lateness per step there passes the
// job's naming threshold per step. The row is cut where the rate of late
// columns changes (binary segmentation of a Bernoulli rate: a cut must
// raise the log-likelihood by more than 3·ln n, and leave pieces of at
// least 1 % of the row), and a piece is late where three of its columns
// at least were, and a quarter of them; or, the row one piece, one in 20
// and in three stretches or more (a rank late now and then all job long,
// as one whose own threads share its core: a list of 25 bursts of one
// column each read the story's rank 1 otherwise). So one
// stall of the host, late in one or two columns, adds no burst beside a
// rank's real lateness (a cut on the mean lateness made one of it in 3 of
// 4 runs of JobPattern here, of 4 jobs each), and a rank late in 3
// columns of every 10 all job long is one steady piece. The rank is chronic
// when its last late piece runs to the row's end and spans a tenth of the
// row (since that piece's first step), in bursts otherwise. A rank late in
// columns but in no piece (a named rank's one stall, late in a column or
// two) is in bursts, those columns; a rank late in no column has no
// pattern (its lateness was in exchanges, not at steps).
//
// Re-run on the whole row at every report, so that a report of a job
// still running (its spill files) calls a rank chronic from the step its
// lateness began until the lateness ends, and a burst after.
//
// Steps are exact; the seconds are the reporting rank's clock at each
// column's end where the report has it (at MPI_Finalize), else (from spill
// files) assume steps spread evenly over the job's time.
//
// Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace corenoise {

// One stretch of late steps, counted from 1, with the job's seconds since
// its start at its ends.
struct LateStretch {
  long first_step = 0, last_step = 0;
  double start_seconds = 0, end_seconds = 0;
};

struct LatenessPattern {
  enum class Kind { chronic, bursts };
  Kind kind = Kind::chronic;
  // Of the job's steps, the share in columns where the rank's lateness per
  // step passed the threshold, with its 95 % Wilson interval (as many trials
  // as columns: neighbouring steps are not independent).
  double late_share = 0, late_share_low = 0, late_share_high = 0;
  // Chronic: since when (the last stretch, running to the end).
  long onset_step = 1;
  double onset_seconds = 0;
  // Every late stretch, in order (a chronic rank's last among them); at most
  // kMaxListedStretches, the latest, the earlier ones counted.
  std::vector<LateStretch> stretches;
  std::size_t stretches_unlisted = 0;
};

inline constexpr std::size_t kMaxListedStretches = 8;

// `row`: the rank's lateness per column of `steps_per_column` steps (the
// last column may hold fewer: `steps` in all); `elapsed_seconds`: the job's;
// `late_per_step_seconds`: a step's lateness that counts as late (the job's
// naming threshold over its steps); `column_end_seconds`: where each column
// ends since the job's start, used when it has a value per column. Nullopt
// for an empty row and for a row late in no column.
std::optional<LatenessPattern> lateness_pattern(std::span<const float> row, long steps_per_column,
                                                long steps, double elapsed_seconds,
                                                double late_per_step_seconds,
                                                std::span<const double> column_end_seconds = {});

}  // namespace corenoise

// The job's report: the model that every view of `corenoise job` renders
// (report/job_report_json.h for the JSON of docs/job.md, schema
// "corenoise-job/1", and the page drawn from it; report/job_banner.h for
// rank 0's summary on stderr). Built once on rank 0 at MPI_Finalize, or by
// `corenoise job --report` from spill files, from every rank's record: the
// causes attributed, the culprits picked, the daemon's verdicts joined, the
// call sites merged and the worst ranks ranked here, never in a view.
//
// Pure: no MPI, no I/O, no clock, so tests build reports from records of
// their own. Thread-safety: free functions of their arguments.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collector/job/model/attribution.h"
#include "collector/job/model/job_findings.h"
#include "collector/job/model/job_phases.h"
#include "collector/job/model/lateness_pattern.h"
#include "collector/job/model/node_digest.h"
#include "collector/job/model/rank_record.h"
#include "collector/job/model/rank_summary.h"

namespace corenoise {

// What rank 0 knows of the job beside the records.
struct JobFacts {
  std::string version;
  std::string program;
  std::string family;
  double started_unix_seconds = 0;
  int ranks_total = 0;  // the job's size
  long steps = 0;
  // Lateness per rank (rows in the order of the records in full) per
  // column of steps_per_column steps: seconds after the column's first
  // arrival.
  std::vector<std::vector<float>> lateness;
  // Per node, by its first rank: its host, view, lateness row, findings
  // and call sites, where rank 0 did not ask for every record
  // (node_digest.h).
  std::map<int, NodeDigest> node_digests;
  long steps_per_column = 1;
  // Where each column ends, in seconds since the reporting rank's start
  // (its clock at the column's last step); empty from spill files.
  std::vector<double> column_end_seconds;
  // What-if: the job's time each rank's lateness cost (step_math.h's
  // savings_by_rank), by rank; ranks never last are not listed.
  std::vector<std::pair<int, double>> savings;
  std::string incomplete_reason;  // empty: every rank reported
  std::string clock_source;
  // The MPI library measured (the reporting rank's): its file and
  // MPI_Get_library_version's first line; empty when not known (a report
  // from spill files).
  std::string mpi_library;
  std::string mpi_library_version;
  // The warm-up's steps (step_math.h's warmup_steps); 0: not split.
  long warmup_steps = 0;
  // The steps (bins of steps_per_bin) that caused the most waiting, most
  // first: where, and who arrived last.
  struct Step {
    long first_step = 0;  // counted from 1
    long steps = 1;       // in its bin
    double wait_caused_seconds = 0;
    int last_rank = 0;
    std::string call, site;  // the reporting rank's call there
  };
  std::vector<Step> worst_steps;
  // A report of the job so far, from a live epoch (rank/live_reduction.h),
  // or from a spill folder whose last live epoch it is; nullopt for a
  // job's final report.
  struct Live {
    long epoch = 0;                   // counted from 1
    double reduced_unix_seconds = 0;  // when rank 0 had the epoch's figures
    double interval_seconds = 0;      // the cadence
    // Rebuilt from a spill folder (`corenoise job --report`): the job ended
    // after this epoch without a final report, and this many of its ranks
    // had reached MPI_Finalize (SpillHeader::finalized_unix_seconds).
    bool rebuilt = false;
    int ranks_finalized = 0;
    bool ended_without_finalize(int ranks_total) const {
      return rebuilt && ranks_finalized < ranks_total;
    }
    // The epoch's own window, since the previous epoch (the job's start
    // for the first), judged as the job is but on the window's figures
    // alone (live_window.h): a rank late in the last minute is named in
    // that minute, however long the job ran before it.
    struct WindowRank {
      int rank = 0;
      JobCause cause = JobCause::more_work;
      double wait_caused_seconds = 0;  // in the window
      // Its pattern over the job (build_job_report, where its lateness
      // row came): chronic since the window's noise began, before the job
      // so far names it.
      std::optional<LatenessPattern> pattern;
    };
    // False at the first epoch after the step bins merged (live_window.h):
    // no window then; the next epoch's is judged from this one.
    bool window_judged = true;
    double window_start_seconds = 0;  // since the job's start, by rank 0's clock
    double window_end_seconds = 0;
    std::vector<WindowRank> window;  // its late ranks, most caused first (kWorstRanks)
  };
  std::optional<Live> live;
};

// Who took a late rank's time: one of its own threads (own-threads),
// another process on one of its CPUs (other-processes), or an interrupt
// line that fired more on its CPU than on the node's others (interrupts:
// counted, not timed, RankRecord::InterruptLine).
struct JobCulprit {
  // traced: what the node's corenoised's tracer saw run on the rank's CPU
  // (a task, an IRQ, a softirq, a work item: `line` says which).
  enum class Kind { thread, process, irq, softirq, traced };
  Kind kind = Kind::thread;
  // The thread's or the process's command, as the kernel names it; an
  // IRQ's device or an architecture line's description ("" for a softirq).
  std::string name;
  long pid = 0;      // a process's; 0 for a thread
  unsigned cpu = 0;  // the CPU a process ran on, or a line fired on; 0 for a thread
  double seconds = 0;
  std::string line;   // an interrupt's: "41", "LOC", "NET_RX"
  double count = 0;   // an interrupt's, on `cpu` over the job
  double excess = 0;  // of those, more than on the node's median other CPU
  double share = 0;   // a traced culprit's: of the CPU's time recorded for the job
};

struct JobRank {
  int rank = 0;
  std::string host;
  std::vector<unsigned> cpus;
  long pid = 0;
  RankMeasures measures;  // as the rank measured them
  // Its excess and causes against the job's reference rank; main_cause is
  // set only when the rank is late (is_late).
  RankAttribution attribution;
  std::vector<JobCulprit> culprits;  // of its causes, for a late rank
  int busy_threads_peak = 0;         // its threads busy at once, at most (0: not known)
  // The node's corenoised verdicts on this rank's CPUs; nullopt when the
  // node's daemon gave none for them.
  std::optional<std::map<unsigned, DaemonVerdict>> daemon;
  // A late rank's: chronic or in bursts, and since when (lateness_pattern.h).
  std::optional<LatenessPattern> pattern;
  // The job's time its lateness cost: the steps replayed with it at the
  // others' pace (step_math.h's savings_by_rank).
  double saving_seconds = 0;
};

// One call site over all ranks: its calls per rank (the most any rank
// made), the wait summed over ranks and the longest single wait.
struct JobCallSite {
  std::string call, site;
  double calls = 0, wait_seconds = 0, wait_max_seconds = 0;
};

// One node: every rank's figures summed, and its latest rank per column.
struct JobNode {
  std::string host;  // its first rank's; empty when that record did not come
  int first_rank = 0;
  int ranks = 0;
  double wait_seconds = 0, wait_caused_seconds = 0;
  int late_ranks = 0;
  int worst_rank = -1;          // the rank that caused the most waiting there; -1: none did
  std::vector<float> lateness;  // per column, its latest rank's lateness
};

struct JobReport {
  JobFacts facts;
  double elapsed_seconds = 0;  // the longest rank's
  std::size_t ranks_reported = 0;
  std::size_t nodes = 0;
  // Summed over ranks: in blocking calls, computing between them, and the
  // waiting the late ranks caused; of those, in point-to-point exchanges.
  double wait_seconds = 0, compute_seconds = 0, wait_caused_seconds = 0;
  double exchange_wait_seconds = 0, exchange_wait_caused_seconds = 0;
  double exchange_uncharged_seconds = 0;
  // The smallest cause named (cause_threshold): the waiting caused and the
  // off-CPU causes; the on-CPU causes.
  double cause_threshold_seconds = 0, cause_threshold_on_cpu_seconds = 0;
  // The waiting the late ranks caused, shared among each one's causes.
  std::array<double, kJobCauseCount> causes{};
  // The job's time fixing each cause would save: each late rank's saving,
  // shared among its causes as its waiting caused is.
  std::array<double, kJobCauseCount> savings{};
  std::vector<JobCallSite> call_sites;  // most waiting first
  std::vector<JobRank> ranks;           // the ranks in full (job_selection.h), in record order
  std::vector<JobNode> by_node;         // every node, by first rank
  std::vector<int> worst_ranks;         // rank numbers, most waiting caused first; at most 20
  std::vector<JobFinding> findings;     // configuration findings (job_findings.h)
  std::vector<JobPhase> phases;         // warm-up and steady state (job_phases.h); may be empty
  std::vector<JobStep> worst_steps;     // most waiting caused first

  bool complete() const { return facts.incomplete_reason.empty(); }
  double collective_wait_seconds() const { return wait_seconds - exchange_wait_seconds; }
  double collective_wait_caused_seconds() const {
    return wait_caused_seconds - exchange_wait_caused_seconds;
  }
  const JobRank* rank(int number) const;  // nullptr when it did not report
};

// `facts` by value: its lateness matrix (ranks × columns) moves into the
// report rather than being copied at MPI_Finalize. `all`: every rank that
// reported; `full`: the records of the ranks ranks_in_full() picked from
// them (a record without a summary is left out). The totals, the
// reference, the worst ranks, the phases and the nodes are of every rank;
// so are the call sites and the findings, from the records when every
// rank's came, else from facts.node_digests; the culprits are the ranks'
// in full.
JobReport build_job_report(JobFacts facts, std::span<const RankSummary> all,
                           const std::vector<RankRecord>& full);
// Every rank in full (spill files, tests).
JobReport build_job_report(JobFacts facts, const std::vector<RankRecord>& records);

}  // namespace corenoise

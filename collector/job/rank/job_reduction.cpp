// MPI_Finalize's side of `corenoise job`: every rank's step waits reduced
// into lateness and delay cost, every rank's record sent to rank 0, the
// reference rank sent back, each node's per-CPU loss summed on its first
// rank and handed to the node's corenoised, and rank 0's report.
//
// Nothing here may hang a job that was going to end: every exchange is
// non-blocking and abandoned at one deadline (the finalize timeout) if a
// rank never comes (it died, it exited without MPI_Finalize). Nor may it
// abort one: the library's communicators return errors (pmpi_wrappers.cpp)
// and a rank that abandons a collective posts no more on that communicator
// (Collectives). Records go to rank 0 point to point, so a report says which
// ranks were missing and holds all that the others sent.
#include "collector/job/rank/job_reduction.h"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/model/job_selection.h"
#include "collector/job/model/rank_config.h"
#include "collector/job/model/spill_layout.h"
#include "collector/job/model/step_math.h"
#include "collector/job/rank/finalize_state.h"
#include "collector/job/rank/interrupt_lines.h"
#include "collector/job/rank/job_daemon.h"
#include "collector/job/rank/job_mpi.h"
#include "collector/job/rank/job_publisher.h"
#include "collector/job/rank/pmpi_completion.h"
#include "collector/job/rank/record_collection.h"
#include "collector/job/rank/sparse_charges.h"
#include "collector/mpi/mpi_deadline.h"

namespace corenoise {
namespace {

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// "libname.so+0x1a2b (symbol)" for a return address.
std::string site_name(std::uintptr_t address) {
  if (address == 0) return "other sites";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) {
    char text[32];
    std::snprintf(text, sizeof(text), "0x%zx", static_cast<std::size_t>(address));
    return text;
  }
  char offset[32];
  std::snprintf(
      offset, sizeof(offset), "+0x%zx",
      static_cast<std::size_t>(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase)));
  std::string name = std::filesystem::path(info.dli_fname).filename().string();
  if (name.empty()) name = "program";
  name += offset;
  if (info.dli_sname != nullptr) name += std::string(" (") + info.dli_sname + ")";
  return name;
}

// A site by the Python lines sampled at it (python_caller.h), most
// sampled first, where the rank is Python; else by its return address.
std::string site_name(const CallSite& site) {
  std::vector<const CallSite::PythonLine*> lines;
  for (const CallSite::PythonLine& line : site.python) {
    if (line.text[0] != '\0') lines.push_back(&line);
  }
  if (lines.empty()) return site_name(site.return_address);
  std::stable_sort(lines.begin(), lines.end(), [](const auto* a, const auto* b) {
    return a->samples > b->samples ||
           (a->samples == b->samples && std::strcmp(a->text.data(), b->text.data()) < 0);
  });
  std::string name;
  for (const CallSite::PythonLine* line : lines)
    name += (name.empty() ? "" : "; ") + std::string(line->text.data());
  return name;
}

struct StepResult {
  bool complete = false;
  long compared_steps_per_bin = 0;  // the bins' size where the steps were compared, else 0
  long steps = 0;  // compared: every rank's (a live epoch's, every rank had finished)
  double wait_caused = 0;
  long warmup_steps = 0;                    // agreed by every rank (step_math.h)
  double warmup_wait_caused = 0;            // of wait_caused, at those steps
  std::vector<JobFacts::Step> worst_steps;  // rank 0's
  std::vector<float> lateness;
  long steps_per_column = 1;
  std::vector<double> column_ends;              // rank 0's: seconds since its start
  std::vector<std::pair<int, double>> savings;  // rank 0's (step_math.h)
  std::string problem;
};

long unix_milliseconds() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// The bins of steps that caused the most waiting, with the last rank to
// arrive and this rank's call there.
std::vector<JobFacts::Step> worst_steps(const RankView& p, const std::vector<double>& caused,
                                        const std::vector<int>& last_rank, long steps_per_bin,
                                        long steps) {
  constexpr std::size_t kWorstSteps = 5;
  std::vector<std::size_t> order(caused.size());
  std::iota(order.begin(), order.end(), 0);
  const std::size_t shown = std::min(kWorstSteps, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                    [&](std::size_t a, std::size_t b) { return caused[a] > caused[b]; });
  const IntervalRecorder& recorder = p.session->recorder;
  const std::vector<std::uint16_t>& tags = recorder.step_waits().sites();
  std::vector<JobFacts::Step> worst;
  // A step that kept the others waiting less than 1 ms says nothing.
  for (std::size_t k = 0; k < shown && caused[order[k]] >= 1e-3; ++k) {
    const std::size_t bin = order[k];
    JobFacts::Step step;
    step.first_step = static_cast<long>(bin) * steps_per_bin + 1;
    step.steps =
        std::min(steps_per_bin, steps - step.first_step + 1);  // the last bin may be partial
    step.wait_caused_seconds = caused[bin];
    step.last_rank = last_rank[bin];
    if (const CallSite* site = bin < tags.size() ? recorder.site_at(tags[bin]) : nullptr) {
      step.call = std::string(mpi_call_name(site->call));
      step.site = site_name(*site);
    }
    worst.push_back(std::move(step));
  }
  return worst;
}

std::string not_every_rank(double timeout) {
  return "not every rank reached MPI_Finalize within " + std::to_string(static_cast<int>(timeout)) +
         " s of the first; the ranks' steps are not compared";
}

// Every rank's step shape (bins, steps per bin, arrival, steps), its least
// and most over the job into b.low and b.high. False, with the problem in
// `result`, when not every rank came in time.
// `deadline` is moved on once every rank is known to have arrived (the
// first reduction completed): from then on each exchange has the full
// timeout, however late the last rank came. Unless the last came so late
// that the first has given up: the first reduction carries each rank's
// arrival, and a rank that finds the earliest arrived a timeout ago posts
// no more (the first, which gave up, would match none of it).
bool reduce_shape(const RankView& p, Collectives& world, FinalizeBuffers& b, MpiDeadline& deadline,
                  double timeout, StepResult& result) {
  const StepWaits& waits = p.session->recorder.step_waits();
  long* const shape = b.shape;
  shape[0] = static_cast<long>(waits.bins().size());
  shape[1] = static_cast<long>(waits.steps_per_bin());
  shape[2] = unix_milliseconds();
  shape[3] = static_cast<long>(waits.steps());
  const auto lowest = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Iallreduce(shape, b.low, 4, MPI_LONG, MPI_MIN, c, r);
  };
  const auto highest = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Iallreduce(shape, b.high, 4, MPI_LONG, MPI_MAX, c, r);
  };
  MPI_Request requests[2];
  const bool posted = world.post(lowest, requests[0]) && world.post(highest, requests[1]);
  if (!posted || !world.finish(requests[0], deadline) || !world.finish(requests[1], deadline)) {
    result.problem = not_every_rank(timeout);
    return false;
  }
  // A margin for the nodes' clocks and for the first's last poll.
  const double margin = std::min(1.0, timeout / 10);
  if (static_cast<double>(unix_milliseconds() - b.low[2]) / 1000 > timeout - margin) {
    world.close();
    result.problem = not_every_rank(timeout);
    return false;
  }
  deadline = MpiDeadline::after(timeout);
  return true;
}

// A live epoch's shape: the ranks froze their figures a step or more apart
// (each at its own call), so the steps compared are those every rank had
// finished, in the bins every rank had filled. Bins of different sizes (a
// rank merged its bins, kMaxStepBins, and another not yet) are not
// compared: the next epoch's will be.
void agree_on_finished_steps(FinalizeBuffers& b) {
  const long bins = std::min(b.low[0], b.low[3] / b.low[1]);
  b.low[0] = b.high[0] = bins;
  b.low[3] = bins * b.low[1];
}

// Every step bin's next-to-last arrival, to rank 0: the least wait of
// the ranks but the bin's last (b.minimum's rank), into b.second.
bool reduce_second_waits(const RankView& p, Collectives& world, FinalizeBuffers& b,
                         MpiDeadline deadline) {
  const StepWaits& waits = p.session->recorder.step_waits();
  const std::size_t n = b.minimum.size();
  b.others.resize(n);
  b.second.assign(p.rank == 0 ? n : 0, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    b.others[i] =
        b.minimum[i].rank == p.rank ? std::numeric_limits<double>::infinity() : waits.bins()[i];
  }
  const auto least_other = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Ireduce(b.others.data(), b.second.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MIN,
                        0, c, r);
  };
  MPI_Request request;
  return world.post(least_other, request) && world.finish(request, deadline);
}

// Every step bin's least wait (with its rank), summed wait and most wait,
// into b.minimum, b.sum and b.maximum. False when not every rank came.
bool reduce_bins(const RankView& p, Collectives& world, FinalizeBuffers& b, MpiDeadline deadline) {
  const StepWaits& waits = p.session->recorder.step_waits();
  const std::size_t n = static_cast<std::size_t>(b.low[0]);
  b.mine.resize(n);
  b.minimum.resize(n);
  b.sum.resize(n);
  b.maximum.resize(n);
  for (std::size_t i = 0; i < n; ++i) b.mine[i] = {waits.bins()[i], p.rank};
  const int count = static_cast<int>(n);
  const auto least_wait = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Iallreduce(b.mine.data(), b.minimum.data(), count, MPI_DOUBLE_INT, MPI_MINLOC, c,
                           r);
  };
  const auto summed_wait = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Iallreduce(waits.bins().data(), b.sum.data(), count, MPI_DOUBLE, MPI_SUM, c, r);
  };
  const auto most_wait = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Iallreduce(waits.bins().data(), b.maximum.data(), count, MPI_DOUBLE, MPI_MAX, c, r);
  };
  MPI_Request reductions[3];
  const bool all_posted = world.post(least_wait, reductions[0]) &&
                          world.post(summed_wait, reductions[1]) &&
                          world.post(most_wait, reductions[2]);
  for (MPI_Request& request : reductions) {
    if (!all_posted || !world.finish(request, deadline)) return false;
  }
  return true;
}

// From the reduced bins: what this rank's lateness caused, its lateness
// row, the job's warm-up and (rank 0) the worst steps.
void read_reduced_bins(const RankView& p, const FinalizeBuffers& b, StepResult& result) {
  const StepWaits& waits = p.session->recorder.step_waits();
  const std::size_t n = b.minimum.size();
  std::vector<double> low_values(n);
  std::vector<int> low_ranks(n);
  for (std::size_t i = 0; i < n; ++i) {
    low_values[i] = b.minimum[i].value;
    low_ranks[i] = b.minimum[i].rank;
  }
  const long steps_per_bin = b.low[1];
  result.wait_caused = wait_caused(p.rank, p.size, low_values, low_ranks, b.sum);
  const std::span<const double> bins = std::span(waits.bins()).first(n);
  result.lateness = lateness_columns(bins, b.maximum, steps_per_bin, &result.steps_per_column);
  // Every rank has the same reductions, so every rank finds the same
  // warm-up, and its measures at that step go into its record.
  const std::vector<double> caused = caused_per_bin(p.size, low_values, b.sum);
  // The steps: every rank's count (its last bin may be partial); they
  // agree, or the bins above would not have.
  const long steps = b.low[3];
  result.steps = steps;
  result.warmup_steps = warmup_steps(caused, steps_per_bin, steps);
  const auto warmup_bins = static_cast<std::size_t>(result.warmup_steps / steps_per_bin);
  result.warmup_wait_caused =
      wait_caused(p.rank, p.size, std::span(low_values).first(warmup_bins),
                  std::span(low_ranks).first(warmup_bins), std::span(b.sum).first(warmup_bins));
  if (p.rank == 0) {
    result.worst_steps = worst_steps(p, caused, low_ranks, steps_per_bin, steps);
    result.column_ends = column_ends(std::span(waits.ends()).first(n), p.session->started_seconds);
    result.savings = savings_by_rank(low_values, low_ranks, b.second);
  }
}

// The step waits of every rank, reduced (step_math.h).
StepResult reduce_steps(const RankView& p, Collectives& world, FinalizeBuffers& b,
                        MpiDeadline& deadline, double timeout) {
  StepResult result;
  if (!reduce_shape(p, world, b, deadline, timeout, result)) return result;
  if (p.live && b.low[1] == b.high[1]) agree_on_finished_steps(b);
  if (b.low[0] != b.high[0] || b.low[1] != b.high[1]) {
    result.problem = "the ranks made different numbers of collective calls over the whole job (" +
                     std::to_string(b.low[0] * b.low[1]) + " to " +
                     std::to_string(b.high[0] * b.high[1]) + " steps); lateness is not compared";
    result.complete = true;
    return result;
  }
  if (!reduce_bins(p, world, b, deadline)) {
    result.problem = not_every_rank(timeout);
    return result;
  }
  // The what-if alone is lost if this one fails: the steps are not.
  if (!reduce_second_waits(p, world, b, deadline)) b.second.clear();
  result.complete = true;
  result.compared_steps_per_bin = b.low[1];
  read_reduced_bins(p, b, result);
  return result;
}

// The others' point-to-point waits charged to this rank, net of its own
// charged to them (peer_waits.h): each rank sends what it charged to the
// ranks it charged, and no more (sparse_charges.h). The tables stay dense,
// of the job's size, on every rank; only the traffic is sparse. Negative
// when a rank did not come.
double reduce_exchanges(const RankView& p, Collectives& world, FinalizeBuffers& b,
                        MpiDeadline deadline) {
  // The frozen session's, in the reduction's buffers (finalize_state.h):
  // MPI may read it after an abandoned exchange.
  const std::span<const double> charged = p.session->peers.charged();
  // Every rank's table has the job's size (JobSession), so every rank that
  // came this far takes part. One that could not would enter no barrier:
  // its next collective must not match the others' barrier.
  if (!world.open()) return -1;
  if (charged.size() != static_cast<std::size_t>(p.size)) {
    world.close();
    return -1;
  }
  std::vector<double>& waited_for_me = b.waited_for_me;
  waited_for_me.resize(charged.size());
  // Its barrier is a collective of `world`, posted and finished inside.
  if (!exchange_charges(world.comm(), kChargeTag, charged, waited_for_me, deadline)) {
    world.abandon();
    return -1;
  }
  return net_wait_caused(waited_for_me, charged);
}

RankRecord own_record(const RankView& p, const StepResult& steps, double exchange_caused) {
  const FrozenSession& s = *p.session;
  RankRecord r;
  r.rank = p.rank;
  r.host = host_name();
  r.cpus = s.cpus;
  r.pid = static_cast<long>(::getpid());
  r.measures = s.measures;
  r.measures.exchange_wait_caused_seconds = std::max(0.0, exchange_caused);
  r.measures.wait_caused_seconds = steps.wait_caused + r.measures.exchange_wait_caused_seconds;
  if (const RankMeasures* warmup = s.measures_at_step(steps.warmup_steps)) {
    // Exchanges are charged over the whole job (peer_waits.h): the warm-up
    // counts the waiting caused at its steps only.
    r.warmup = *warmup;
    r.warmup->wait_caused_seconds = steps.warmup_wait_caused;
    r.warmup->exchange_wait_caused_seconds = 0;
  }
  for (const OwnThread& t : s.threads) {
    r.threads.push_back({t.name, t.seconds_on_rank_cpus});
  }
  for (const CallSite& site : s.recorder.call_sites()) {
    r.sites.push_back({std::string(mpi_call_name(site.call)), site_name(site),
                       static_cast<double>(site.calls), site.wait_seconds, site.wait_max_seconds});
  }
  // The libraries mapped by now (a runtime imported after MPI_Init too).
  std::ifstream maps(s.options->proc_root + "/self/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)),
                           std::istreambuf_iterator<char>());
  r.config = read_rank_config(
      mapped, [](const char* name) { return std::getenv(name); }, s.peak_busy_threads,
      static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // A rank bound to several CPUs: are they a NUMA node or a package?
  if (r.cpus.size() > 1)
    r.config.binding_domain = binding_domain(read_cpu_domains(s.options->sys_root), r.cpus);
  return r;
}

// On the node's first rank: what else ran on the node's CPUs, and what
// its corenoised last said about them.
void add_node_view(const RankView& p, Collectives& node, FinalizeBuffers& b, RankRecord& record,
                   MpiDeadline deadline) {
  b.pid = record.pid;
  int node_size = 1;
  PMPI_Comm_size(node.comm(), &node_size);
  std::vector<long>& pids = b.pids;
  pids.resize(p.node_rank == 0 ? static_cast<std::size_t>(node_size) : 0);
  // Along a tree, not MPI_Igather: the node's first rank hears from a few
  // of its ranks, not all (tree_gather.h).
  if (!node.open() ||
      !node.account(tree_gather_blocks(node.comm(), kPidTreeTag, &b.pid, sizeof(long), pids.data(),
                                       b.pid_tree, deadline)) ||
      p.node_rank != 0)
    return;
  const auto now = scan_tasks(p.session->options->proc_root);
  for (const CpuCulprit& c : culprits_between(p.process->tasks_at_start, now, pids, 3, 0.01)) {
    record.node_culprits.push_back({c.cpu, c.pid, c.command, c.seconds});
  }
  record.node_interrupts = interrupt_lines_between(
      p.process->interrupts_at_start, read_interrupt_tables(p.session->options->proc_root),
      record.measures.elapsed_seconds, 3);
  record.node_daemon = daemon_verdicts(p.session->options->socket_path);
  record.node_traced = daemon_traced_culprits(p.session->options->socket_path, job_id(record.pid));
}

// Above --full ranks, the node's lateness row on its first rank: each
// column's latest rank of the node (empty elsewhere, or when the node's
// ranks did not meet).
// Every rank of the node posts the same fixed buffer, whatever its steps
// gave: the column count first, then up to kMaxLatenessColumns columns.
std::vector<float> reduce_node_lateness(const RankView& p, Collectives& node, FinalizeBuffers& b,
                                        const StepResult& steps, MpiDeadline deadline) {
  // Wanted in a node's digest only (record_collection.h).
  if (static_cast<std::size_t>(p.size) <= p.session->options->full_ranks) return {};
  b.lateness_mine.assign(kMaxLatenessColumns + 1, 0.0f);
  b.lateness_node.assign(p.node_rank == 0 ? kMaxLatenessColumns + 1 : 0, 0.0f);
  const std::size_t columns = std::min(steps.lateness.size(), kMaxLatenessColumns);
  b.lateness_mine[0] = static_cast<float>(columns);
  std::copy_n(steps.lateness.begin(), columns, b.lateness_mine.begin() + 1);
  MPI_Request request;
  const bool posted = node.post(
      [&](MPI_Comm c, MPI_Request* r) {
        return PMPI_Ireduce(b.lateness_mine.data(), b.lateness_node.data(),
                            static_cast<int>(kMaxLatenessColumns + 1), MPI_FLOAT, MPI_MAX, 0, c, r);
      },
      request);
  if (!posted || !node.finish(request, deadline) || p.node_rank != 0) return {};
  const auto count = static_cast<std::size_t>(b.lateness_node[0]);
  return {b.lateness_node.begin() + 1, b.lateness_node.begin() + 1 + static_cast<long>(count)};
}

// Each rank hands its own loss, by cause, split over the CPUs it ran on,
// to its node's corenoised: the daemon takes from a rank only CPUs that
// rank may run on (docs/control.md, "Threat model"). The node's first rank
// says once how many of the node's ranks the daemon did not take.
void report_node_loss(const RankView& p, Collectives& node, FinalizeBuffers& b,
                      const RankRecord& record, const RankAttribution& mine, MpiDeadline deadline) {
  const std::string& socket = p.session->options->socket_path;
  // No daemon on this node (every rank sees the same): nothing to say, but
  // the node's ranks still meet below, all or none.
  std::string error;
  if (!job_socket(socket).empty()) {
    std::vector<JobCpuLoss> per_cpu;
    for (unsigned cpu : record.cpus) {
      JobCpuLoss entry{cpu, {}};
      bool any = false;
      for (std::size_t i = 0; i < kJobCauseCount; ++i) {
        entry.lost_seconds[i] = mine.causes[i] / static_cast<double>(record.cpus.size());
        any = any || entry.lost_seconds[i] > 0;
      }
      if (any) per_cpu.push_back(entry);
    }
    const double now_unix = p.session->started_unix_seconds + record.measures.elapsed_seconds;
    error = send_job_line(
        socket, job_request(job_id(record.pid), now_unix,
                            std::max(record.measures.elapsed_seconds, 1e-3), p.size, per_cpu));
  }
  b.refused = error.empty() ? 0 : 1;
  MPI_Request request;
  const bool posted = node.post(
      [&](MPI_Comm c, MPI_Request* r) {
        return PMPI_Ireduce(&b.refused, &b.refused_on_node, 1, MPI_INT, MPI_SUM, 0, c, r);
      },
      request);
  if (!posted || !node.finish(request, deadline) || p.node_rank != 0) return;
  if (b.refused_on_node == 0) return;
  int node_size = 1;
  PMPI_Comm_size(node.comm(), &node_size);
  std::fprintf(
      stderr,
      "corenoise job: %s: corenoised did not take the loss of %d of the node's %d ranks%s%s\n",
      record.host.c_str(), b.refused_on_node, node_size, error.empty() ? "" : ": ", error.c_str());
}

// Rank 0's judgements of the ranks (job_selection.h): the job's so far
// and, in a live epoch, its own window's (live_window.h), with the window's
// late ranks and its span by rank 0's clock.
struct RankJudgements {
  std::vector<JobJudgement> judged;  // the job's, then the window's
  std::vector<JobFacts::Live::WindowRank> window;
  double window_start_seconds = 0, window_end_seconds = 0;
};
RankJudgements judge_gathered(const RankView& p, const GatheredRecords& gathered,
                              const RankRecord& own, bool window_known) {
  RankJudgements out;
  out.judged.push_back(judge_ranks(gathered.summaries));
  if (!window_known) return out;
  out.judged.push_back(judge_windows(gathered.summaries, *p.baseline));
  out.window = window_ranks(gathered.summaries, *p.baseline, out.judged.back());
  out.window_start_seconds = p.baseline->own.elapsed_seconds;
  out.window_end_seconds = own.measures.elapsed_seconds;
  return out;
}

// What each rank needs of a judgement to attribute its own loss as the
// report does: the reference rank's measures and the naming thresholds.
struct SharedJudgement {
  RankMeasures reference;
  CauseThresholds threshold;
};

// From rank 0 to all: each judgement's reference and thresholds (one, or
// in a live epoch two: the job's and its window's), and rank 0's verdict
// on whether every rank came: one verdict for all, so that either every
// rank hands its node's daemon its figures or none. Empty when the verdict
// was no or the broadcast did not finish.
std::vector<SharedJudgement> share_reference(const RankView& p, Collectives& world,
                                             FinalizeBuffers& b, const RankJudgements& judgements,
                                             bool every_rank_came, MpiDeadline deadline) {
  constexpr std::size_t kEach = kRankMeasureCount + 2;
  const std::size_t count = p.live ? 2 : 1;
  std::vector<double>& shared = b.reference;
  const std::size_t verdict = count * kEach;
  shared.assign(verdict + 1, 0.0);
  if (p.rank == 0) {
    // A window not judged (live_window.h) sends zeros, which no rank reads.
    for (std::size_t i = 0; i < std::min(count, judgements.judged.size()); ++i) {
      const JobJudgement& judged = judgements.judged[i];
      double* at = shared.data() + i * kEach;
      std::copy_n(as_array(judged.reference), kRankMeasureCount, at);
      at[kRankMeasureCount] = judged.threshold.seconds;
      at[kRankMeasureCount + 1] = judged.threshold.on_cpu_seconds;
    }
    shared[verdict] = every_rank_came ? 1.0 : 0.0;
  }
  MPI_Request request;
  const bool posted = world.post(
      [&](MPI_Comm c, MPI_Request* r) {
        return PMPI_Ibcast(shared.data(), static_cast<int>(shared.size()), MPI_DOUBLE, 0, c, r);
      },
      request);
  if (!posted || !world.finish(request, deadline) || shared[verdict] != 1.0) return {};
  std::vector<SharedJudgement> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double* at = shared.data() + i * kEach;
    std::copy_n(at, kRankMeasureCount, as_array(out[i].reference));
    out[i].threshold = {at[kRankMeasureCount], at[kRankMeasureCount + 1]};
  }
  return out;
}

// Rank 0's facts of the job beside the records: who ran, how many steps,
// and why the report is incomplete, if it is.
JobFacts job_facts(const RankView& p, const FrozenSession& session, const StepResult& steps,
                   const RankRecord& own, GatheredRecords& gathered) {
  const JobOptions& options = *session.options;
  JobFacts facts;
  facts.version = CORENOISE_VERSION;
  facts.program = options.program;
  facts.family = options.family.empty() ? CORENOISE_JOB_FAMILY : options.family;
  facts.started_unix_seconds = session.started_unix_seconds;
  facts.ranks_total = p.size;
  facts.steps = steps.steps > 0 ? steps.steps : static_cast<long>(own.measures.steps);
  facts.steps_per_column = steps.steps_per_column;
  facts.column_end_seconds = steps.column_ends;
  facts.savings = steps.savings;
  facts.clock_source = session.clock_source;
  facts.mpi_library = p.process->mpi_library;
  facts.mpi_library_version = p.process->mpi_library_version;
  facts.warmup_steps = steps.warmup_steps;
  facts.worst_steps = steps.worst_steps;
  const std::vector<int>& missing = gathered.missing;
  if (!missing.empty()) {
    std::string list;
    for (std::size_t i = 0; i < missing.size() && i < 20; ++i)
      list += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > 20) list += ", ...";
    facts.incomplete_reason = std::to_string(missing.size()) + " of " + std::to_string(p.size) +
                              " ranks did not report within " +
                              std::to_string(static_cast<int>(options.finalize_timeout_seconds)) +
                              " s of MPI_Finalize (ranks " + list + ")";
  } else if (!steps.problem.empty()) {
    facts.incomplete_reason = steps.problem;
  }
  facts.node_digests = std::move(gathered.node_digests);
  auto& lateness = gathered.lateness;
  const bool rows_agree = std::all_of(lateness.begin(), lateness.end(), [&](const auto& row) {
    return row.size() == lateness.front().size();
  });
  if (rows_agree && !lateness.empty() && !lateness.front().empty())
    facts.lateness = std::move(lateness);
  return facts;
}

// This rank's attribution as the report makes it, once every rank has the
// reference, with whether it is late: against each shared judgement, over
// the job so far and (a live epoch) over the window since the previous
// epoch. Empty when the job was not reduced (a rank missing, the reference
// not shared, or this rank's record not sent): then this rank hands its
// daemon nothing.
struct OwnVerdict {
  RankAttribution attribution;
  bool late = false;
};
std::vector<OwnVerdict> own_verdicts(const RankView& p, Collectives& world, FinalizeBuffers& b,
                                     const RankRecord& record, const RecordsMoved& moved,
                                     const RankJudgements& judgements, const StepResult& steps,
                                     MpiDeadline deadline) {
  const bool steps_complete = steps.complete;
  // Posted by every rank that came this far, whether its record was sent
  // or not: the broadcast must match on every rank.
  const std::vector<SharedJudgement> shared = share_reference(
      p, world, b, judgements, steps_complete && moved.gathered.missing.empty(), deadline);
  if (shared.empty() || !moved.sent) return {};
  std::vector<OwnVerdict> verdicts;
  const bool window = p.live && p.baseline->window_known(steps.compared_steps_per_bin);
  for (std::size_t i = 0; i < (window ? shared.size() : 1); ++i) {
    const RankMeasures measures =
        i == 0 ? record.measures : measures_since(record.measures, p.baseline->own);
    OwnVerdict verdict{attribute(measures, shared[i].reference, shared[i].threshold), false};
    verdict.late = is_late(verdict.attribution, measures, shared[i].threshold);
    verdicts.push_back(verdict);
  }
  return verdicts;
}

// Each node's loss to its daemon, attributed as the report attributes it.
// False when the job was not reduced.
bool hand_node_loss(const RankView& p, Collectives& world, Collectives& node, FinalizeBuffers& b,
                    const RankRecord& record, const RecordsMoved& moved,
                    const RankJudgements& judgements, const StepResult& steps,
                    MpiDeadline deadline) {
  std::vector<OwnVerdict> mine =
      own_verdicts(p, world, b, record, moved, judgements, steps, deadline);
  if (mine.empty()) return false;
  // Only a late rank's loss is the job's: the report names the same ranks.
  if (!mine[0].late) mine[0].attribution.causes.fill(0.0);
  report_node_loss(p, node, b, record, mine[0].attribution, deadline);
  return true;
}

// A live epoch's figures of this rank to its node's daemon: its waiting
// caused so far and, where judged, in the epoch's window, each with its
// main cause where it is late: the running job's series (docs/metrics.md).
// False when the job was not reduced; else this rank's window starts anew
// here.
bool hand_live_figures(const RankView& p, Collectives& world, FinalizeBuffers& b,
                       const RankRecord& record, const RecordsMoved& moved,
                       const RankJudgements& judgements, const StepResult& steps,
                       MpiDeadline deadline) {
  const std::vector<OwnVerdict> mine =
      own_verdicts(p, world, b, record, moved, judgements, steps, deadline);
  if (mine.empty()) return false;
  LiveBaseline& before = *p.baseline;
  const std::string& socket = p.session->options->socket_path;
  if (!job_socket(socket).empty()) {
    JobLiveRequest live;
    live.job_id = job_id(record.pid);
    live.epoch = p.epoch;
    live.elapsed_seconds = record.measures.elapsed_seconds;
    live.interval_seconds = p.session->options->live_interval_seconds;
    live.ranks = static_cast<unsigned>(p.size);
    live.rank = static_cast<unsigned>(p.rank);
    live.wait_caused_seconds = record.measures.wait_caused_seconds;
    if (mine[0].late) live.cause = mine[0].attribution.main_cause;
    if (mine.size() == 2) {
      live.window_seconds = record.measures.elapsed_seconds - before.own.elapsed_seconds;
      live.window_wait_caused_seconds =
          record.measures.wait_caused_seconds - before.own.wait_caused_seconds;
      if (mine[1].late) live.window_cause = mine[1].attribution.main_cause;
    }
    send_job_line(socket, job_live_request(live), /*retry=*/false);
  }
  before.own = record.measures;
  before.steps_per_bin = steps.compared_steps_per_bin;
  ++before.epochs;
  return true;
}

// A live epoch's facts of its own window, on rank 0 (live_window.h); the
// epoch's time and cadence are the live reduction's to add.
JobFacts::Live live_facts(const RankView& p, RankJudgements& judgements, bool window_known) {
  JobFacts::Live live;
  live.epoch = p.epoch;
  live.window_judged = window_known;
  live.window_start_seconds = judgements.window_start_seconds;
  live.window_end_seconds = judgements.window_end_seconds;
  live.window = std::move(judgements.window);
  return live;
}

}  // namespace

JobReduced reduce_job(const RankView& p, FinalizeBuffers& b, MpiDeadline deadline, double timeout) {
  Collectives world(p.comm), node(p.node);
  // The ranks' steps and exchanges, into this rank's record.
  const StepResult steps = reduce_steps(p, world, b, deadline, timeout);
  // Only once every rank came (a collective would wait for a missing one).
  const double exchange_caused = reduce_exchanges(p, world, b, deadline);
  RankRecord record = own_record(p, steps, exchange_caused);
  add_node_view(p, node, b, record, deadline);
  const std::vector<float> node_lateness = reduce_node_lateness(p, node, b, steps, deadline);
  RecordsMoved moved = move_records(p, world, b, record, steps.lateness, node_lateness, deadline);
  // Before hand_live_figures moves the baseline on (every rank decides alike).
  const bool window_known = p.live && p.baseline->window_known(steps.compared_steps_per_bin);
  RankJudgements judged =
      p.rank == 0 ? judge_gathered(p, moved.gathered, record, window_known) : RankJudgements{};
  JobReduced reduced;
  reduced.reduced = p.live
                        ? hand_live_figures(p, world, b, record, moved, judged, steps, deadline)
                        : hand_node_loss(p, world, node, b, record, moved, judged, steps, deadline);
  // Nothing pending writes into the buffers, or they are kept for good.
  reduced.settled = world.settled() && node.settled() && !moved.pending;
  if (p.rank != 0) return reduced;
  reduced.facts = job_facts(p, *p.session, steps, record, moved.gathered);
  if (p.live) {
    reduced.facts.live = live_facts(p, judged, window_known);
    // The next window starts at this epoch, where it was reduced.
    if (reduced.reduced) p.baseline->keep(moved.gathered.summaries, p.size);
  }
  reduced.gathered = std::move(moved.gathered);
  return reduced;
}

bool finish_job(JobProcess& p, MpiDeadline deadline) {
  JobSession& session = *p.session;
  session.close();
  const JobOptions& options = session.options();
  // Kept from the start, so that an exception (bad_alloc, a /proc read)
  // after an abandoned operation cannot free what MPI may still write.
  p.kept = new FinalizeBuffers;
  FinalizeBuffers& b = *p.kept;
  b.frozen = session.freeze();
  // The frozen measures, not another reading of the session's.
  if (SpillWriter* spill = session.spill())
    spill->mark_finalized(b.frozen.started_unix_seconds + b.frozen.measures.elapsed_seconds);
  const RankView view{p.rank, p.size, p.node_rank, p.comm, p.node, &b.frozen, &p, false};
  JobReduced reduced = reduce_job(view, b, deadline, options.finalize_timeout_seconds);
  // Rank 0 has every figure: the spill files are no longer needed. If it
  // has not, they stay for `corenoise job --report`.
  SpillWriter* spill = session.spill();
  if (spill != nullptr && reduced.reduced) {
    spill->remove();
    // Rank 0's part of the last live epoch (live_epoch.h) with them.
    if (p.rank == 0) ::unlink((std::filesystem::path(options.spill_dir) / kLiveEpochFile).c_str());
  }
  if (reduced.settled) {
    delete p.kept;
    p.kept = nullptr;
  }
  if (p.rank != 0) return reduced.settled;
  JobFacts& facts = reduced.facts;
  if (!facts.incomplete_reason.empty() && spill != nullptr) {
    facts.incomplete_reason += "; the ranks' spill files stay in " + options.spill_dir +
                               " (corenoise job --report " + options.spill_dir + ")";
  }
  if (const JobPublisher publish = job_publisher()) {
    JobReport report =
        build_job_report(std::move(facts), reduced.gathered.summaries, reduced.gathered.records);
    // What the outputs need not hold while they are written: 40 MB of
    // summaries at 100,000 ranks.
    std::vector<RankSummary>().swap(reduced.gathered.summaries);
    std::vector<RankRecord>().swap(reduced.gathered.records);
    publish(report, options);
    // The live file ends as the final report (its "live" null).
    if (!options.live_path.empty()) {
      JobOptions live = options;
      live.json_path = options.live_path;
      live.html_path.clear();
      live.banner = false;
      publish(report, live);
    }
  }
  // Empty once every rank removed its file; else it stays, with the files.
  if (spill != nullptr && reduced.reduced) ::rmdir(options.spill_dir.c_str());
  return reduced.settled;
}

}  // namespace corenoise

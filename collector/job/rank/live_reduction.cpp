#include "collector/job/rank/live_reduction.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <limits>
#include <stdexcept>
#include <thread>

#include "collector/job/model/job_report.h"
#include "collector/job/model/live_epoch.h"
#include "collector/job/model/spill_layout.h"
#include "collector/job/rank/call_clock.h"
#include "collector/job/rank/job_publisher.h"
#include "collector/job/rank/pmpi_completion.h"

namespace corenoise {
namespace {

// The fiber's stack: the reduction's own frames (rank 0 judges, builds and
// writes the report on it), never touched but where used.
constexpr std::size_t kStackBytes = std::size_t{4} << 20;
// A live epoch waits as long as its ranks take to call MPI again.
constexpr double kNoTimeout = 1e9;

// The one running, for the fiber's entry and its pauses (one per process,
// on the recording thread).
LiveReduction* running = nullptr;

}  // namespace

LiveReduction::LiveReduction(JobProcess& process, double interval_seconds)
    : process_(process), interval_(interval_seconds) {
  // Mapped, with its lowest page inaccessible: an overflow faults there
  // instead of writing over the heap. Never unmapped (the object lives as
  // long as the process).
  const long page = ::sysconf(_SC_PAGESIZE);
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) throw std::runtime_error("no memory for the live reduction's stack");
  ::mprotect(stack, static_cast<std::size_t>(page), PROT_NONE);
  stack_ = static_cast<char*>(stack);
  // Duplicates inherit the library's error handler: errors come back.
  PMPI_Comm_dup(process.comm, &comm_);
  PMPI_Comm_dup(process.node, &node_);
}

void LiveReduction::attach() {
  running = this;
  due_ = monotonic_seconds() + interval_;
  // The others post the start's receive at once; rank 0 at the cadence.
  process_.session->run_between_calls(&LiveReduction::resume_between_calls, this,
                                      process_.rank == 0 ? due_ : monotonic_seconds());
}

double LiveReduction::resume_between_calls(void* self, double) {
  auto* live = static_cast<LiveReduction*>(self);
  live->resume();
  return live->finished_ ? std::numeric_limits<double>::infinity() : live->next_resume_;
}

void LiveReduction::resume() {
  if (finished_) return;
  if (!started_) {
    ::getcontext(&fiber_);
    fiber_.uc_stack.ss_sp = stack_;
    fiber_.uc_stack.ss_size = kStackBytes;
    fiber_.uc_link = &caller_;
    ::makecontext(&fiber_, &LiveReduction::fiber_entry, 0);
    started_ = true;
  }
  poll_pause = &LiveReduction::pause_on_fiber;
  ::swapcontext(&caller_, &fiber_);
  poll_pause = nullptr;
}

bool LiveReduction::pause_on_fiber(std::chrono::microseconds) {
  LiveReduction* self = running;
  self->next_resume_ = monotonic_seconds() + (self->in_epoch_ ? kEpochPoll : kStartPoll);
  ::swapcontext(&self->fiber_, &self->caller_);
  return !self->give_up_;
}

void LiveReduction::fiber_entry() {
  LiveReduction* self = running;
  // Nothing may unwind past the fiber's first frame (there is none above it).
  try {
    self->run();
  } catch (const std::exception& e) {
    self->settled_ = false;
    std::fprintf(stderr, "corenoise job: rank %d: the live reduction stopped: %s\n",
                 self->process_.rank, e.what());
  } catch (...) {
    self->settled_ = false;
    std::fprintf(stderr, "corenoise job: rank %d: the live reduction stopped\n",
                 self->process_.rank);
  }
  self->finished_ = true;
}  // returns to caller_ (uc_link)

void LiveReduction::run() {
  for (;;) {
    long word = 0;
    if (!broadcast_start(word) || word < 0) return;
    run_epoch(word);
    if (give_up_ || !settled_) return;
  }
}

bool LiveReduction::broadcast_start(long& word) {
  if (process_.rank == 0) {
    while (!stopping_ && monotonic_seconds() < due_) {
      next_resume_ = due_;
      ::swapcontext(&fiber_, &caller_);
    }
    start_word_ = stopping_ ? -1 : ++epochs_;
  }
  in_epoch_ = false;
  MPI_Request request;
  if (PMPI_Ibcast(&start_word_, 1, MPI_LONG, 0, comm_, &request) != MPI_SUCCESS) return false;
  if (!pmpi_complete(request, MpiDeadline::never())) {
    settled_ = false;
    return false;
  }
  word = start_word_;
  return true;
}

void LiveReduction::run_epoch(long epoch) {
  in_epoch_ = true;
  // Kept, never freed, where an operation on them is left pending.
  auto* b = new FinalizeBuffers;
  b->frozen = process_.session->freeze();
  const RankView view{process_.rank, process_.size, process_.node_rank, comm_,
                      node_,         &b->frozen,    &process_,          true,
                      epoch,         &baseline_};
  JobReduced reduced = reduce_job(view, *b, MpiDeadline::never(), kNoTimeout);
  // Before the barrier: rank 0 keeps the epoch for --report only once every
  // rank has kept its part (SpillHeader::epochs).
  SpillWriter* spill = process_.session->spill();
  if (spill != nullptr && reduced.reduced) spill->keep_epoch(epoch, b->summary);
  // The barrier only after an epoch whose every operation completed: a rank
  // that abandoned one posts no more on these communicators (as the
  // finalize's Collectives), or its barrier could match another rank's
  // collective of the epoch.
  MPI_Request request;
  const bool ended = reduced.settled && !give_up_ &&
                     PMPI_Ibarrier(comm_, &request) == MPI_SUCCESS &&
                     pmpi_complete(request, MpiDeadline::never());
  settled_ = reduced.settled && ended;
  if (settled_) delete b;
  if (process_.rank == 0 && !give_up_) publish(epoch, reduced);
  due_ = monotonic_seconds() + interval_;
  in_epoch_ = false;
}

void LiveReduction::publish(long epoch, JobReduced& reduced) const {
  const JobOptions& options = process_.session->options();
  JobFacts& facts = reduced.facts;
  // reduce_job gave the epoch's window (live_window.h); its time and cadence here.
  if (!facts.live) facts.live.emplace();
  JobFacts::Live& live = *facts.live;
  live.epoch = epoch;
  live.reduced_unix_seconds = clock_seconds(CLOCK_REALTIME);
  live.interval_seconds = interval_;
  // What a job killed before the next epoch leaves (live_epoch.h).
  if (!options.spill_dir.empty() && process_.session->spill() != nullptr && reduced.reduced) {
    SpillWriter::write_beside(options.spill_dir, kLiveEpochFile,
                              live_epoch_text(facts, reduced.gathered.records));
  }
  // The --live file, and the --html page of the job so far (it reloads at
  // the cadence while the job runs; the final report replaces it).
  const JobPublisher publish = job_publisher();
  if ((options.live_path.empty() && options.html_path.empty()) || publish == nullptr) return;
  const JobReport report =
      build_job_report(std::move(facts), reduced.gathered.summaries, reduced.gathered.records);
  JobOptions as_live = options;
  as_live.json_path = options.live_path;
  as_live.banner = false;
  publish(report, as_live);
}

bool LiveReduction::stop(MpiDeadline deadline) {
  stopping_ = true;
  // Rank 0's stop must reach every rank, whether its fiber ran yet or not.
  for (int after_deadline = 0; !finished_ && after_deadline < 100000;) {
    resume();
    if (finished_) break;
    if (deadline.passed()) {
      give_up_ = true;
      ++after_deadline;
    } else {
      std::this_thread::sleep_for(kLibraryPollPause);
    }
  }
  process_.session->run_between_calls(nullptr, nullptr, std::numeric_limits<double>::infinity());
  if (!finished_ || !settled_ || give_up_) return false;
  PMPI_Comm_free(&node_);
  PMPI_Comm_free(&comm_);
  return true;
}

}  // namespace corenoise

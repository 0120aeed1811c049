// What one rank sends rank 0 at MPI_Finalize (job_reduction.cpp), and what
// a spill file is read back into (spill_report.h): its measures, its
// threads, its call sites and, from one rank per node, the node's other
// processes and its corenoised's verdicts. The wire form is JSON, read as
// untrusted: a malformed record throws, and the rank counts as missing.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "collector/job/model/rank_config.h"
#include "collector/job/model/rank_measures.h"
#include "probe/cause.h"

namespace corenoise {

// corenoised's persistent verdict on one CPU, as the node's reporting rank
// asked for it at MPI_Finalize (job_daemon.h).
struct DaemonVerdict {
  std::string state;                  // "ok", "noisy", ...; "unknown" when the daemon said none
  Cause cause;                        // Cause{} when none
  std::optional<double> age_seconds;  // since the round that gave it; none if never finished
  bool operator==(const DaemonVerdict&) const = default;
};

struct RankRecord {
  int rank = 0;
  std::string host;
  std::vector<unsigned> cpus;
  long pid = 0;
  RankMeasures measures;
  struct Thread {
    std::string name;
    double seconds = 0;
  };
  std::vector<Thread> threads;  // its other threads, busiest on its CPUs first
  struct Site {
    std::string call, site;
    double calls = 0, wait_seconds = 0, wait_max_seconds = 0;
  };
  std::vector<Site> sites;
  // From the node's reporting rank: other processes per CPU, and the
  // node's corenoised verdicts per CPU (nullopt where none answered).
  struct Culprit {
    int cpu = -1;
    long pid = 0;
    std::string command;
    double seconds = 0;
  };
  std::vector<Culprit> node_culprits;
  // The interrupt lines that fired more on one of the node's CPUs than on
  // its other CPUs (the median), from /proc/interrupts and /proc/softirqs
  // (collector/job/rank/interrupt_lines.h).
  struct InterruptLine {
    int cpu = -1;
    std::string id;    // "41", "LOC"; a softirq's name ("NET_RX")
    std::string name;  // the IRQ's device or the line's description; "" for a softirq
    bool softirq = false;
    double count = 0;   // on that CPU, over the job so far
    double excess = 0;  // more than on the node's median other CPU

    // A device's line (an IRQ by number, or the softirqs devices raise:
    // NET_RX, NET_TX, BLOCK, IRQ_POLL, TASKLET, HI), not one the CPU's own
    // activity drives (the timer, scheduler IPIs, RCU): those fire more on
    // a busy CPU than on an idle one, whoever made it busy.
    bool from_a_device() const {
      if (softirq) {
        for (const char* s : {"NET_RX", "NET_TX", "BLOCK", "IRQ_POLL", "TASKLET", "HI"}) {
          if (id == s) return true;
        }
        return false;
      }
      return !id.empty() && id.find_first_not_of("0123456789") == std::string::npos;
    }
  };
  std::vector<InterruptLine> node_interrupts;
  // What else ran on the job's CPUs of the node, as its corenoised's
  // tracer saw it (`job-culprits`, daemon/job_tracer.h): each CPU's
  // largest, five at most; empty where the daemon does not trace.
  struct TracedCulprit {
    int cpu = -1;
    std::string kind;  // task, irq, softirq, work, events_lost
    std::string text;  // as the daemon names it: "inj[1234]", "IRQ 36 (virtio1-req.0)"
    double seconds = 0;
    double share = 0;  // of the CPU's time recorded for the job
  };
  std::vector<TracedCulprit> node_traced;
  std::optional<std::map<unsigned, DaemonVerdict>> node_daemon;
  RankConfig config;  // what its configuration showed (rank_config.h)
  // Its measures at the end of the job's warm-up (JobFacts::warmup_steps),
  // with wait_caused_seconds the waiting it caused at those steps; nullopt
  // when the job has no warm-up apart, or from spill files.
  std::optional<RankMeasures> warmup;
};

nlohmann::json to_wire(const RankRecord& record);

// A record's call sites and its node's other processes as the wire carries
// them (a node's digest too, node_digest.h); the readers throw nlohmann's
// errors.
nlohmann::json sites_to_wire(const std::vector<RankRecord::Site>& sites);
std::vector<RankRecord::Site> sites_from_wire(const nlohmann::json& wire);
nlohmann::json culprits_to_wire(const std::vector<RankRecord::Culprit>& culprits);
std::vector<RankRecord::Culprit> culprits_from_wire(const nlohmann::json& wire);
nlohmann::json interrupts_to_wire(const std::vector<RankRecord::InterruptLine>& lines);
std::vector<RankRecord::InterruptLine> interrupts_from_wire(const nlohmann::json& wire);
nlohmann::json traced_to_wire(const std::vector<RankRecord::TracedCulprit>& culprits);
std::vector<RankRecord::TracedCulprit> traced_from_wire(const nlohmann::json& wire);
RankRecord record_from_wire(const nlohmann::json& wire);  // throws nlohmann's errors

// The verdicts as the wire carries them:
// {"<cpu>": {"state":..., "why": <the Cause's wire form>, "age_seconds":...}, ...}.
nlohmann::json verdicts_to_json(const std::map<unsigned, DaemonVerdict>& verdicts);
// What is not a verdict (a key that is not a CPU number, an entry that is
// not an object) is left out, never thrown on: a daemon's odd answer costs
// its verdicts, not the rank's record.
std::map<unsigned, DaemonVerdict> verdicts_from_json(const nlohmann::json& json);

}  // namespace corenoise

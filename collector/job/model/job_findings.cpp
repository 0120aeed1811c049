#include "collector/job/model/job_findings.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "probe/cpu_list.h"

namespace corenoise {
namespace {

constexpr std::size_t kExamples = 3;

const char* const kBindFix =
    "bind one rank per core (mpirun --bind-to core, srun --cpu-bind=cores, mpiexec.hydra "
    "-bind-to core); a rank that runs N threads gets N cores (mpirun --map-by slot:PE=N, srun "
    "--cpus-per-task=N)";

// "0-3, 7": ranks as ranges, as CPU lists are written.
std::string ranks_text(const std::vector<int>& ranks) {
  std::vector<unsigned> as_list;
  for (int r : ranks) as_list.push_back(static_cast<unsigned>(r));
  return format_cpu_list(as_list);
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string evidence_of(const JobFinding& f) {
  std::string evidence = f.intro;
  for (std::size_t i = 0; i < f.examples.size(); ++i)
    evidence += (i == 0 ? ": " : "; ") + f.examples[i];
  if (f.examples_total > f.examples.size())
    evidence += "; and " + std::to_string(f.examples_total - f.examples.size()) + " more";
  return evidence;
}

// One kind's finding as it fills: its ranks, their nodes, a few examples.
class Finding {
 public:
  Finding(std::string kind, std::string fix) {
    finding_.kind = std::move(kind);
    finding_.fix = std::move(fix);
  }
  void add(const RankRecord& r) {
    if (ranks_.insert(r.rank).second && nodes_seen_.insert(r.host).second)
      finding_.nodes.push_back(r.host);
  }
  void example(std::string text) {
    ++examples_total_;
    if (examples_.size() < kExamples) examples_.push_back(std::move(text));
  }
  bool empty() const { return ranks_.empty(); }
  // `intro`: what the examples show, before them.
  JobFinding done(const std::string& intro) {
    finding_.ranks.assign(ranks_.begin(), ranks_.end());
    finding_.intro = intro;
    finding_.examples = examples_;
    finding_.examples_total = examples_total_;
    finding_.evidence = evidence_of(finding_);
    return finding_;
  }

 private:
  JobFinding finding_;
  std::set<int> ranks_;
  std::set<std::string> nodes_seen_;
  std::vector<std::string> examples_;
  std::size_t examples_total_ = 0;
};

bool carries_config(const RankRecord& r) { return r.config.node_cpus > 0; }
bool bound(const RankRecord& r) {
  return r.cpus.size() < static_cast<std::size_t>(r.config.node_cpus);
}

std::string thread_names(const RankRecord& r) {
  std::string names;
  std::size_t shown = 0;
  for (const RankRecord::Thread& t : r.threads) {
    if (t.seconds <= 0 || shown == 4) continue;
    names += (shown++ == 0 ? "" : ", ") + t.name;
  }
  return names;
}

void threads_over_cpus(const std::vector<const RankRecord*>& records,
                       std::vector<JobFinding>& out) {
  Finding f("threads-over-cpus",
            "one busy thread per CPU of a rank: size the pools to the rank's CPUs "
            "(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, PJRT_NPROC), or give each "
            "rank as many cores as it runs threads");
  for (const RankRecord* r : records) {
    const auto cpus = r->cpus.size();
    if (cpus == 0 || r->config.busy_threads_peak <= static_cast<int>(cpus)) continue;
    f.add(*r);
    const std::string names = thread_names(*r);
    f.example("rank " + std::to_string(r->rank) + " on " + r->host + " ran " +
              std::to_string(r->config.busy_threads_peak) + " threads at once on " +
              plural(cpus, "CPU", "CPUs") + " (" + format_cpu_list(r->cpus) + ")" +
              (names.empty() ? "" : ", its busiest others: " + names));
  }
  if (!f.empty()) out.push_back(f.done("ranks ran more busy threads at once than they have CPUs"));
}

// Ranks of a node each bound to the whole of one NUMA node or package
// that other ranks share: their threads roam the domain and meet each
// other's. Returns those ranks, which the shared and unbound findings then
// leave to this one.
std::set<int> domain_binding(const std::vector<const RankRecord*>& records,
                             std::vector<JobFinding>& out) {
  Finding f("domain-binding",
            "bind each rank to cores of its own: mpirun --bind-to core (Open MPI binds to a "
            "package, or a NUMA domain, by default when a node runs more than two ranks), srun "
            "--cpu-bind=cores, mpiexec.hydra -bind-to core; a rank that runs N threads gets N "
            "cores (mpirun --map-by slot:PE=N, srun --cpus-per-task=N)");
  std::map<std::pair<std::string, std::string>, std::vector<const RankRecord*>> groups;
  std::vector<std::pair<std::string, std::string>> order;
  for (const RankRecord* r : records) {
    if (r->config.binding_domain.empty()) continue;
    auto& group = groups[{r->host, r->config.binding_domain}];
    if (group.empty()) order.push_back({r->host, r->config.binding_domain});
    group.push_back(r);
  }
  std::set<int> concerned;
  for (const auto& key : order) {
    const auto& group = groups[key];
    if (group.size() < 2) continue;
    std::vector<int> numbers;
    for (const RankRecord* r : group) {
      f.add(*r);
      numbers.push_back(r->rank);
      concerned.insert(r->rank);
    }
    f.example("on " + key.first + " ranks " + ranks_text(numbers) + " are each bound to all of " +
              key.second + " (" + plural(group.front()->cpus.size(), "CPU", "CPUs") + " " +
              format_cpu_list(group.front()->cpus) + ")");
  }
  if (!f.empty())
    out.push_back(f.done(
        "ranks are each bound to a whole NUMA node or package that other ranks share, rather "
        "than to cores of their own"));
  return concerned;
}

// One node's ranks (two or more): the CPUs its bound ranks share, and
// its ranks bound to none. `in_domains`: as shared_and_unbound's.
void shared_and_unbound_on(const std::string& host, const std::vector<const RankRecord*>& ranks,
                           const std::set<int>& in_domains, Finding& shared, Finding& unbound) {
  // The bound ranks on each CPU; the groups of ranks that share CPUs.
  std::map<unsigned, std::vector<const RankRecord*>> on_cpu;
  std::vector<const RankRecord*> loose;
  for (const RankRecord* r : ranks) {
    if (!bound(*r)) {
      if (in_domains.count(r->rank) == 0) loose.push_back(r);
      continue;
    }
    for (unsigned cpu : r->cpus) on_cpu[cpu].push_back(r);
  }
  std::map<std::vector<int>, std::vector<unsigned>> groups;
  for (const auto& [cpu, sharing] : on_cpu) {
    if (sharing.size() < 2) continue;
    const bool said = std::all_of(sharing.begin(), sharing.end(), [&](const RankRecord* r) {
      return in_domains.count(r->rank) > 0;
    });
    if (said) continue;
    std::vector<int> numbers;
    for (const RankRecord* r : sharing) numbers.push_back(r->rank);
    std::sort(numbers.begin(), numbers.end());
    groups[numbers].push_back(cpu);
    for (const RankRecord* r : sharing) shared.add(*r);
  }
  for (const auto& [numbers, cpus] : groups) {
    // Every rank of the group bound to the same several CPUs (a NUMA
    // node or package is its own finding, domain_binding).
    bool same_set = cpus.size() > 1;
    for (const RankRecord* r : on_cpu[cpus.front()])
      same_set = same_set && r->cpus == on_cpu[cpus.front()].front()->cpus;
    shared.example("on " + host + " ranks " + ranks_text(numbers) + " share " +
                   plural(cpus.size(), "CPU", "CPUs") + " " + format_cpu_list(cpus) +
                   (same_set ? " (each bound to all of them)" : ""));
  }
  if (!loose.empty()) {
    std::vector<int> numbers;
    for (const RankRecord* r : loose) {
      unbound.add(*r);
      numbers.push_back(r->rank);
    }
    unbound.example("on " + host + " " + plural(loose.size(), "rank", "ranks") + " (" +
                    ranks_text(numbers) + ") of " + std::to_string(ranks.size()) +
                    " may run on all " + std::to_string(loose.front()->config.node_cpus) + " CPUs");
  }
}

// `in_domains`: the ranks of the domain-binding finding, whose sharing is
// said there (a group of them alone is not repeated here).
void shared_and_unbound(const std::vector<const RankRecord*>& records,
                        const std::set<int>& in_domains, std::vector<JobFinding>& out) {
  std::map<std::string, std::vector<const RankRecord*>> by_host;
  std::vector<std::string> hosts;
  for (const RankRecord* r : records) {
    if (by_host[r->host].empty()) hosts.push_back(r->host);
    by_host[r->host].push_back(r);
  }
  Finding shared("shared-cpus", kBindFix);
  Finding unbound("unbound-ranks", kBindFix);
  for (const std::string& host : hosts) {
    if (by_host[host].size() >= 2)
      shared_and_unbound_on(host, by_host[host], in_domains, shared, unbound);
  }
  if (!shared.empty()) out.push_back(shared.done("ranks of one node are bound to the same CPUs"));
  if (!unbound.empty())
    out.push_back(unbound.done("ranks that share a node are not bound to CPUs of their own"));
}

void unset_pools(const std::vector<const RankRecord*>& records, std::vector<JobFinding>& out) {
  Finding f("pool-size-unset",
            "set each pool's size to the threads a rank should run, for every rank "
            "(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PJRT_NPROC=1 for one; "
            "mpirun -x VAR, srun passes the environment)");
  for (const RankRecord* r : records) {
    // Bound to one CPU, a library sizes its pool to 1: nothing to fix.
    if (r->cpus.size() < 2 || r->config.unset_pools.empty()) continue;
    f.add(*r);
    std::string unset;
    for (const auto& pool : r->config.unset_pools)
      unset += (unset.empty() ? "" : ", ") + pool.variable + " (" + pool.library + ")";
    f.example("rank " + std::to_string(r->rank) + " on " + r->host + ", on " +
              plural(r->cpus.size(), "CPU", "CPUs") + ": " + unset);
  }
  if (!f.empty())
    out.push_back(f.done(
        "thread-pool sizes left unset while the library that reads them is loaded, which then "
        "starts a thread per CPU the rank may use"));
}

void xla_flags(const std::vector<const RankRecord*>& records, std::vector<JobFinding>& out) {
  Finding f("xla-flags-dropped",
            "keep only --xla_... flags in XLA_FLAGS (intra_op_parallelism_threads is a "
            "TensorFlow session option, not an XLA flag); size XLA's CPU pools with PJRT_NPROC");
  std::map<std::string, std::vector<int>> by_text;
  for (const RankRecord* r : records) {
    if (r->config.xla_dropped.empty()) continue;
    f.add(*r);
    by_text[r->config.xla_dropped].push_back(r->rank);
  }
  for (const auto& [text, ranks] : by_text) {
    f.example("XLA ignores '" + text + "' on " + plural(ranks.size(), "rank", "ranks") + " (" +
              ranks_text(ranks) + ")");
  }
  if (!f.empty())
    out.push_back(f.done(
        "XLA_FLAGS words that XLA drops: its parser stops, silently, at the first word that does "
        "not begin with '-' and drops it and all after it (a value that does not begin with '-' "
        "is read as a file name)"));
}

// The kinds in the order job_findings gives them.
constexpr const char* kKinds[] = {"threads-over-cpus", "domain-binding",  "shared-cpus",
                                  "unbound-ranks",     "pool-size-unset", "xla-flags-dropped"};

std::size_t kind_order(const std::string& kind) {
  const auto* it = std::find(std::begin(kKinds), std::end(kKinds), kind);
  return static_cast<std::size_t>(it - std::begin(kKinds));
}

}  // namespace

std::vector<JobFinding> merge_findings(const std::vector<std::vector<JobFinding>>& per_node) {
  std::map<std::pair<std::size_t, std::string>, JobFinding> merged;
  for (const std::vector<JobFinding>& node : per_node) {
    for (const JobFinding& f : node) {
      const auto [it, added] = merged.try_emplace({kind_order(f.kind), f.kind}, f);
      if (added) continue;
      JobFinding& into = it->second;
      std::vector<int> ranks;
      std::set_union(into.ranks.begin(), into.ranks.end(), f.ranks.begin(), f.ranks.end(),
                     std::back_inserter(ranks));
      into.ranks = std::move(ranks);
      for (const std::string& host : f.nodes) {
        if (std::find(into.nodes.begin(), into.nodes.end(), host) == into.nodes.end())
          into.nodes.push_back(host);
      }
      for (const std::string& example : f.examples) {
        if (into.examples.size() < kExamples) into.examples.push_back(example);
      }
      into.examples_total += f.examples_total;
    }
  }
  std::vector<JobFinding> out;
  for (auto& [key, f] : merged) {
    f.evidence = evidence_of(f);
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<JobFinding> job_findings(const std::vector<RankRecord>& records) {
  std::vector<const RankRecord*> known;
  for (const RankRecord& r : records) {
    if (carries_config(r)) known.push_back(&r);
  }
  std::sort(known.begin(), known.end(),
            [](const RankRecord* a, const RankRecord* b) { return a->rank < b->rank; });
  std::vector<JobFinding> out;
  threads_over_cpus(known, out);
  const std::set<int> in_domains = domain_binding(known, out);
  shared_and_unbound(known, in_domains, out);
  unset_pools(known, out);
  xla_flags(known, out);
  return out;
}

}  // namespace corenoise

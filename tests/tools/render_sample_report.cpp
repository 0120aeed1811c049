// Writes the report page of a made-up sweep or job, for looking at the page,
// for the headless-Chromium tests and for tests/bench/report_page_bench.sh:
//
//   render_sample_report OUT.html [NODES CORES]        a sweep (8 × 16)
//   render_sample_report --job OUT.html [RANKS COLUMNS] a job (120 × 200)
//
// The sweep is tests/tools/sample_reports.h's. The job has 120 ranks
// per node, on time within a few microseconds, except three late ones with
// different causes (ranks 5, 17 and 2, worst first) and a hostile culprit
// name; its lateness is written as corenoise job writes it (floats).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "collector/report/cluster_report_json.h"
#include "collector/report/report_page.h"
#include "tests/tools/sample_reports.h"

namespace corenoise {
namespace {

// The job report's JSON ("corenoise-job/1"): `ranks` ranks × `columns`
// lateness columns, one step per column.
nlohmann::json job_sample(unsigned ranks, unsigned columns) {
  using nlohmann::json;
  constexpr unsigned kRanksPerNode = 120;
  const std::vector<std::string> causes = {"own-threads", "other-processes", "interrupts", "steal",
                                           "page-faults", "slower-clock",    "more-work"};
  std::mt19937_64 random(42);
  std::exponential_distribution<double> jitter(1 / 3e-6);  // a few µs
  std::uniform_real_distribution<double> unit(0, 1);
  auto micro = [](double seconds) { return std::round(seconds * 1e6) / 1e6; };
  // The late ranks, worst first, and how late they are at a column.
  struct Late {
    unsigned rank;
    std::string cause, advice, culprit_kind, culprit;
    double every, seconds;  // late at one column in `every`, by about `seconds`
  };
  std::vector<Late> late = {
      {5, "own-threads",
       "Pin the job's helper threads off the rank's core (OMP_PROC_BIND, or fewer threads).",
       "thread", "python3", 1, 0.0011},
      {17, "other-processes",
       "Move the other process off the job's cores, or leave it a core of its own.", "process",
       "stress-ng", 10, 0.004},
      {2, "interrupts",
       "Steer the interrupt off this core (irqbalance banned CPUs, or smp_affinity).", "process",
       "irq/45-mlx5<script>alert(1)</script>", 50, 0.002},
  };
  late.erase(
      std::remove_if(late.begin(), late.end(), [&](const Late& l) { return l.rank >= ranks; }),
      late.end());

  // Lateness first, then what it means: at each column every rank waits
  // for the last one, and the last one caused everybody's wait beyond the
  // second-last's arrival.
  std::vector<double> lateness(std::size_t{ranks} * columns);
  std::vector<double> excess(ranks, 0.0), wait(ranks, 0.0), caused(ranks, 0.0);
  for (unsigned r = 0; r < ranks; ++r) {
    const auto it =
        std::find_if(late.begin(), late.end(), [&](const Late& l) { return l.rank == r; });
    for (unsigned c = 0; c < columns; ++c) {
      double v = jitter(random);
      if (it != late.end() && std::fmod(c, it->every) == 0)
        v += it->seconds * (0.6 + 0.8 * unit(random));
      lateness[std::size_t{r} * columns + c] = static_cast<float>(v);
    }
  }
  for (unsigned c = 0; c < columns; ++c) {
    double first = INFINITY, last = -INFINITY, second = -INFINITY;
    unsigned latest = 0;
    for (unsigned r = 0; r < ranks; ++r) {
      const double v = lateness[std::size_t{r} * columns + c];
      first = std::min(first, v);
      if (v > last) {
        second = last;
        last = v;
        latest = r;
      } else {
        second = std::max(second, v);
      }
    }
    for (unsigned r = 0; r < ranks; ++r) {
      const double v = lateness[std::size_t{r} * columns + c];
      wait[r] += last - v;
      excess[r] += v - first;
    }
    if (ranks > 1) caused[latest] += (last - second) * (ranks - 1);
  }

  json rows = json::array();
  json ranks_json = json::array();
  json total_causes = json::object();
  for (const std::string& cause : causes) total_causes[cause] = 0.0;
  double wait_total = 0, compute_total = 0, caused_total = 0;
  for (unsigned r = 0; r < ranks; ++r) {
    const auto it =
        std::find_if(late.begin(), late.end(), [&](const Late& l) { return l.rank == r; });
    json row = json::array();
    // As corenoise job writes them: floats, each in the JSON as the double
    // it converts to (up to 17 digits).
    for (unsigned c = 0; c < columns; ++c)
      row.push_back(static_cast<float>(lateness[std::size_t{r} * columns + c]));
    rows.push_back(std::move(row));
    char host[32];
    std::snprintf(host, sizeof host, "node%03u", r / kRanksPerNode + 1);
    json rank_causes = json::object();
    for (const std::string& cause : causes) rank_causes[cause] = 0.0;
    const double compute = columns * 0.01 - excess[r];
    json rank = {{"rank", r},
                 {"host", host},
                 {"cpus", std::to_string(r % kRanksPerNode)},
                 {"wait_seconds", micro(wait[r])},
                 {"compute_seconds", micro(compute)},
                 {"wait_caused_seconds", micro(caused[r])},
                 {"excess_seconds", micro(excess[r])},
                 {"cause", "none"},
                 {"causes", rank_causes},
                 {"advice", ""},
                 {"culprits", json::array()},
                 {"daemon", nullptr}};
    if (it != late.end()) {
      const double share = excess[r];
      rank["cause"] = it->cause;
      rank["causes"][it->cause] = micro(share * 0.9);
      rank["causes"]["page-faults"] = micro(share * 0.05);
      rank["advice"] = it->advice;
      rank["culprits"] = json::array(
          {{{"kind", it->culprit_kind}, {"name", it->culprit}, {"seconds", micro(share * 0.85)}}});
      rank["daemon"] = json{
          {"state", "noisy"}, {"cause", "lost 4 % to detours: " + it->cause}, {"age_seconds", 12}};
      total_causes[it->cause] = total_causes[it->cause].get<double>() + micro(share * 0.9);
      total_causes["page-faults"] = total_causes["page-faults"].get<double>() + micro(share * 0.05);
    }
    wait_total += wait[r];
    compute_total += compute;
    caused_total += caused[r];
    ranks_json.push_back(std::move(rank));
  }
  json worst = json::array();
  for (const Late& l : late) worst.push_back(l.rank);
  return {{"schema", "corenoise-job/1"},
          {"version", "0.1.0-sample"},
          {"program", "python3 jax_mpi.py --steps " + std::to_string(columns)},
          {"mpi_family", "openmpi"},
          {"started_unix_seconds", 1767261600},
          {"elapsed_seconds", columns * 0.0102},
          {"ranks_total", ranks},
          {"ranks_reported", ranks},
          {"nodes", (ranks + kRanksPerNode - 1) / kRanksPerNode},
          {"steps", columns},
          {"complete", true},
          {"incomplete_reason", nullptr},
          {"wait_seconds", micro(wait_total)},
          {"compute_seconds", micro(compute_total)},
          {"wait_caused_seconds", micro(caused_total)},
          {"causes", total_causes},
          {"call_sites", json::array({{{"call", "MPI_Allreduce"},
                                       {"site", "MPI.cpython-311-x86_64-linux-gnu.so+0x1a2b3"},
                                       {"calls", columns},
                                       {"wait_seconds", micro(wait_total * 0.8)},
                                       {"wait_max_seconds", 0.0042}},
                                      {{"call", "MPI_Barrier"},
                                       {"site", "libjax_mpi.so+0x4410"},
                                       {"calls", columns},
                                       {"wait_seconds", micro(wait_total * 0.2)},
                                       {"wait_max_seconds", 0.0011}}})},
          {"ranks", ranks_json},
          {"worst_ranks", worst},
          {"lateness",
           {{"unit", "seconds"}, {"steps_per_column", 1}, {"columns", columns}, {"rows", rows}}}};
}

}  // namespace
}  // namespace corenoise

int main(int argc, char** argv) {
  const bool job = argc > 1 && std::string_view(argv[1]) == "--job";
  const int first = job ? 2 : 1;  // OUT.html
  if (argc - first != 1 && argc - first != 3) {
    std::cerr << "usage: render_sample_report OUT.html [NODES CORES]\n"
                 "       render_sample_report --job OUT.html [RANKS COLUMNS]\n";
    return 2;
  }
  const bool sized = argc - first == 3;
  const unsigned a = sized ? std::strtoul(argv[first + 1], nullptr, 10) : job ? 120 : 8;
  const unsigned b = sized ? std::strtoul(argv[first + 2], nullptr, 10) : job ? 200 : 16;
  const std::string html =
      job ? corenoise::render_report_page(corenoise::job_sample(a, b))
          : corenoise::render_report_page(corenoise::to_json(corenoise::sample_sweep(a, b)));
  std::ofstream out(argv[first], std::ios::binary);
  out << html;
  if (!out) {
    std::cerr << "render_sample_report: cannot write " << argv[first] << "\n";
    return 1;
  }
  return 0;
}

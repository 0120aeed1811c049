// Exercises every MpiEnvironment helper with checkable results and prints one
// JSON line per rank on stdout; tests/integration/mpi_env_test.cpp runs it
// under mpiexec (and as a singleton) and checks the lines.
//
//   mpi_env_check [--timeout SECONDS] [--hang-rank R [--hang-at leaders]]
//
// --hang-rank R: rank R sleeps forever before a world barrier, so the
// watchdog (armed with --timeout, default 60 s) must abort the job; with
// --hang-at leaders, after that barrier, so that leader 0 waits for R's
// node in the leaders' roll call and must name it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "collector/mpi/mpi_library.h"

namespace {

using corenoise::MpiEnvironment;
using nlohmann::json;

struct Record {
  std::uint64_t node;
  double value;
};

std::span<std::byte> bytes_of(std::vector<Record>& records) {
  return std::as_writable_bytes(std::span(records));
}

// The leader collectives, each with a result the test can recompute.
json exercise_leaders(MpiEnvironment& env) {
  json out;
  const int node = env.node_index();

  env.barrier_leaders();
  const double start = env.common_start_time(0.5);
  out["start_time"] = start;

  std::vector<double> sums = {static_cast<double>(node), 1.0};
  env.allreduce_sum(sums);
  std::vector<double> dmin = {static_cast<double>(node) + 0.5};
  std::vector<double> dmax = dmin;
  env.allreduce_min(dmin);
  env.allreduce_max(dmax);
  std::vector<std::uint64_t> usum = {static_cast<std::uint64_t>(node), 1};
  std::vector<std::uint64_t> umin = {static_cast<std::uint64_t>(node) + 7};
  std::vector<std::uint64_t> umax = umin;
  env.allreduce_sum(usum);
  env.allreduce_min(umin);
  env.allreduce_max(umax);
  out["sum_double"] = sums;
  out["min_double"] = dmin[0];
  out["max_double"] = dmax[0];
  out["sum_u64"] = usum;
  out["min_u64"] = umin[0];
  out["max_u64"] = umax[0];

  // Commutative record merge: keep the record with the larger value. Record
  // i of node n has value (n + 1) * (i % 2 == 0 ? 1 : -1), so even records
  // end with the last node's, odd ones with node 0's.
  std::vector<Record> records(3);
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i] = {static_cast<std::uint64_t>(node), (node + 1.0) * (i % 2 == 0 ? 1.0 : -1.0)};
  }
  env.allreduce_records(
      bytes_of(records), sizeof(Record),
      [](const std::byte* in, std::byte* inout, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
          Record a;
          Record b;
          std::memcpy(&a, in + i * sizeof(Record), sizeof a);
          std::memcpy(&b, inout + i * sizeof(Record), sizeof b);
          if (a.value > b.value) std::memcpy(inout + i * sizeof(Record), &a, sizeof a);
        }
      },
      /*commutative=*/true);
  json max_records = json::array();
  for (const auto& r : records) max_records.push_back({{"node", r.node}, {"value", r.value}});
  out["max_records"] = max_records;

  // Non-commutative merge: "left operand wins". MPI must apply it in node
  // order, so the result is node 0's record whatever the algorithm.
  std::vector<Record> first = {{static_cast<std::uint64_t>(node), 0.0}};
  env.allreduce_records(
      bytes_of(first), sizeof(Record),
      [](const std::byte* in, std::byte* inout, std::size_t n) {
        std::memcpy(inout, in, n * sizeof(Record));
      },
      /*commutative=*/false);
  out["first_record_node"] = first[0].node;

  // A merge that throws: the exception must come back out of the call on
  // every rank that ran the merge.
  std::vector<Record> bad = {{0, 0.0}};
  try {
    env.allreduce_records(
        bytes_of(bad), sizeof(Record),
        [](const std::byte*, std::byte*, std::size_t) { throw std::runtime_error("merge"); }, true);
    out["merge_threw"] = false;  // a rank that merged nothing (e.g. a single node)
  } catch (const std::runtime_error& e) {
    out["merge_threw"] = std::string(e.what()) == "merge";
  }

  const std::uint32_t mine[2] = {static_cast<std::uint32_t>(node),
                                 static_cast<std::uint32_t>(env.world_rank())};
  const auto gathered = env.gather_records(std::as_bytes(std::span(mine)));
  json gathered_json = json::array();
  for (std::size_t i = 0; i + sizeof mine <= gathered.size(); i += sizeof mine) {
    std::uint32_t rec[2];
    std::memcpy(rec, gathered.data() + i, sizeof rec);
    gathered_json.push_back({rec[0], rec[1]});
  }
  out["gathered"] = gathered_json;  // [node index, world rank] per node, on node 0

  // node n contributes n + 1 bytes of value n (node 0 sends one zero byte).
  const std::vector<std::byte> blob(node + 1, static_cast<std::byte>(node));
  json blobs = json::array();
  for (const auto& b : env.gather_blobs(blob)) {
    json values = json::array();
    for (std::byte v : b) values.push_back(static_cast<int>(v));
    blobs.push_back(values);
  }
  out["blobs"] = blobs;

  const std::string hello = "hello from node 0";
  std::vector<std::byte> message;
  if (node == 0) {
    const auto* p = reinterpret_cast<const std::byte*>(hello.data());
    message.assign(p, p + hello.size());
  }
  env.broadcast(message);
  out["broadcast"] = std::string(reinterpret_cast<const char*>(message.data()), message.size());
  return out;
}

// The node collectives, on every rank, each with a checkable result.
json exercise_node(MpiEnvironment& env) {
  json out;
  const std::string text = "node " + std::to_string(env.node_index());
  std::vector<std::byte> message;
  if (env.is_leader()) {
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    message.assign(p, p + text.size());
  }
  env.broadcast_node(message);
  out["broadcast"] = std::string(reinterpret_cast<const char*>(message.data()), message.size());

  // node rank r contributes r + 1 bytes of value r.
  const std::vector<std::byte> blob(env.node_rank() + 1, static_cast<std::byte>(env.node_rank()));
  json blobs = json::array();
  for (const auto& b : env.gather_node_blobs(blob)) {
    json values = json::array();
    for (std::byte v : b) values.push_back(static_cast<int>(v));
    blobs.push_back(values);
  }
  out["blobs"] = blobs;

  // Every rank writes its slot of one shared segment and reads all slots.
  const std::span<std::byte> shared = env.node_shared_memory(64 * sizeof(std::uint32_t));
  auto* slots = reinterpret_cast<std::uint32_t*>(shared.data());
  bool zeroed = true;
  for (int i = 0; i < env.node_size(); ++i) zeroed = zeroed && slots[i] == 0;
  env.barrier_node();
  slots[env.node_rank()] = static_cast<std::uint32_t>(100 + env.node_rank());
  env.barrier_node();
  out["shared_zeroed"] = zeroed;
  out["shared"] = std::vector<std::uint32_t>(slots, slots + env.node_size());
  return out;
}

int run(int argc, char** argv) {
  double timeout = 60;
  int hang_rank = -1;
  bool hang_at_leaders = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--timeout" && i + 1 < argc) {
      timeout = std::stod(argv[++i]);
    } else if (arg == "--hang-rank" && i + 1 < argc) {
      hang_rank = std::stoi(argv[++i]);
    } else if (arg == "--hang-at" && i + 1 < argc && std::string(argv[i + 1]) == "leaders") {
      hang_at_leaders = true;
      ++i;
    } else {
      std::fprintf(stderr, "mpi_env_check: unknown argument '%s'\n", arg.c_str());
      return 1;
    }
  }

  const auto opened = corenoise::open_mpi_environment(&argc, &argv);
  MpiEnvironment& env = *opened;
  env.start_watchdog(timeout, "mpi_env_check");
  json line = {{"world_rank", env.world_rank()},
               {"world_size", env.world_size()},
               {"node_index", env.node_index()},
               {"node_count", env.node_count()},
               {"node_rank", env.node_rank()},
               {"node_size", env.node_size()},
               {"is_leader", env.is_leader()},
               {"thread_level", env.thread_level()},
               {"library_version", env.library_version()}};
  const auto hang = [] {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  };
  if (env.world_rank() == hang_rank && !hang_at_leaders) hang();
  env.barrier_world();
  if (env.world_rank() == hang_rank) hang();
  if (env.is_leader()) {
    line["leader"] = exercise_leaders(env);
  } else {
    try {
      env.barrier_leaders();
      line["non_leader_rejected"] = false;
    } catch (const std::logic_error&) {
      line["non_leader_rejected"] = true;
    }
  }
  line["node"] = exercise_node(env);
  env.barrier_world();
  env.cancel_watchdog();
  line["bytes_sent"] = env.bytes_sent();
  // One write per line so that lines of different ranks never interleave.
  const std::string text = line.dump() + "\n";
  [[maybe_unused]] const auto written = ::write(STDOUT_FILENO, text.data(), text.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_env_check: %s\n", e.what());
    return 1;
  }
}

#include "collector/job/rank/record_collection.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "collector/job/model/job_selection.h"
#include "collector/job/model/node_digest.h"
#include "collector/job/rank/tree_gather.h"

namespace corenoise {
namespace {

// The job's rank of this node's first rank: a translation between the
// node's group and the world's, no message.
int node_first_rank(const RankView& p) {
  if (p.node == MPI_COMM_NULL) return p.rank;
  MPI_Group node_group, world_group;
  PMPI_Comm_group(p.node, &node_group);
  PMPI_Comm_group(p.comm, &world_group);
  int zero = 0, first = MPI_UNDEFINED;
  PMPI_Group_translate_ranks(node_group, 1, &zero, world_group, &first);
  PMPI_Group_free(&node_group);
  PMPI_Group_free(&world_group);
  return first == MPI_UNDEFINED ? p.rank : first;
}

nlohmann::json wire_of(const RankRecord& record, const std::vector<float>& lateness) {
  nlohmann::json wire = to_wire(record);
  wire["lateness"] = lateness;
  return wire;
}

std::string text_of(const nlohmann::json& wire) {
  // Names come from any process on the node, cut at 15 bytes: invalid
  // UTF-8 is replaced, not thrown on.
  return wire.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Every rank's record to its node's first rank along a tree
// (tree_gather.h), which returns its node's digest (node_digest.h);
// nullopt elsewhere. A record that does not parse is left out of the
// digest.
std::optional<NodeDigest> node_digest_of(const RankView& p, FinalizeBuffers& b,
                                         const RankRecord& record,
                                         const std::vector<float>& node_lateness,
                                         MpiDeadline deadline, bool& pending) {
  if (p.node == MPI_COMM_NULL) return std::nullopt;
  std::vector<std::string> texts;
  std::vector<int> from;
  const TreeGathered gathered = tree_gather_texts(p.node, kRecordTreeTag, text_of(to_wire(record)),
                                                  texts, from, b.node_tree, deadline);
  pending = pending || gathered.pending;
  if (p.node_rank != 0) return std::nullopt;
  std::vector<RankRecord> records;
  for (std::string& text : texts) {
    const nlohmann::json wire = nlohmann::json::parse(text, nullptr, false);
    std::string().swap(text);
    try {
      if (!wire.is_discarded()) records.push_back(record_from_wire(wire));
    } catch (const std::exception&) {
      // Malformed: the node's digest goes without it.
    }
  }
  std::sort(records.begin(), records.end(),
            [](const RankRecord& a, const RankRecord& c) { return a.rank < c.rank; });
  return node_digest(record, records, node_lateness);
}

// A rank other than 0: `bytes` to rank 0. False when not sent by
// `deadline`; `pending` when MPI may still read the buffer.
bool send_to_rank0(const RankView& p, const void* bytes, std::size_t size, int tag,
                   MpiDeadline deadline, bool& pending) {
  MPI_Request request;
  if (PMPI_Isend(bytes, static_cast<int>(size), MPI_BYTE, 0, tag, p.comm, &request) != MPI_SUCCESS)
    return false;
  // `pending` gathers every operation of the stages before: one left
  // pending is never cleared by a later one that completed.
  const bool left = !pmpi_complete(request, deadline);
  pending = pending || left;
  return !left;
}

bool send_record(const RankView& p, FinalizeBuffers& b, const nlohmann::json& wire,
                 MpiDeadline deadline, bool& pending) {
  b.record = text_of(wire);
  return send_to_rank0(p, b.record.data(), b.record.size(), kRecordTag, deadline, pending);
}

// Whether rank 0 asks for every record; above `full` ranks it asks for
// those it names, and each node's first rank sends its node's digest.
bool every_record(int size, std::size_t full) { return static_cast<std::size_t>(size) <= full; }

// Rank 0's account of what came, by rank.
class Collection {
 public:
  Collection(int size, std::size_t full)
      : size_(size),
        every_record_(every_record(size, full)),
        has_summary_(static_cast<std::size_t>(size), 0) {}

  // The summaries the tree brought, each sound (keep_sound): all of them
  // once the ranks were asked; else those that came, the rest to follow
  // point to point, every record wanted if every record is.
  void take_summaries(std::vector<RankSummary>&& all, bool asked) {
    summaries_ = std::move(all);
    for (const RankSummary& s : summaries_) {
      took(s);
      if (!asked && every_record_) expect(s.number());
    }
  }
  // One summary, point to point: its record is wanted if every record is.
  void add_summary(int source, const std::string& bytes) {
    RankSummary s;
    if (bytes.size() != sizeof(s)) return;
    std::memcpy(&s, bytes.data(), sizeof(s));
    if (!sound(s, size_) || s.number() != source) return;
    if (has_summary_[static_cast<std::size_t>(source)] != 0) return;
    summaries_.push_back(s);
    took(s);
    if (every_record_) expect(source);
  }
  void expect(int rank) { expected_.insert(rank); }
  // A record, parsed at once: the wire text is not kept.
  void add_record(int source, const std::string& text) {
    if (records_.count(source) != 0) return;
    const nlohmann::json wire = nlohmann::json::parse(text, nullptr, false);
    if (wire.is_discarded()) return;
    try {
      Arrived arrived{record_from_wire(wire), wire.value("lateness", std::vector<float>{})};
      if (arrived.record.rank == source) records_.emplace(source, std::move(arrived));
    } catch (const std::exception&) {
      // Malformed: the rank counts as missing.
    }
  }
  // A node's digest, from its first rank.
  void add_digest(int source, const std::string& text) {
    if (digests_.count(source) != 0) return;
    const nlohmann::json wire = nlohmann::json::parse(text, nullptr, false);
    if (wire.is_discarded()) return;
    try {
      digests_.emplace(source, digest_from_wire(wire));
    } catch (const std::exception&) {
      // Malformed: the node's findings and view go without it.
    }
  }
  void add_own(const RankRecord& record, const std::vector<float>& lateness,
               std::optional<NodeDigest> digest) {
    if (every_record_ || expected_.count(record.rank) != 0)
      records_.emplace(record.rank, Arrived{record, lateness});
    if (digest) digests_.emplace(record.rank, std::move(*digest));
  }
  bool done() const {
    if (summaries_.size() != static_cast<std::size_t>(size_)) return false;
    const auto came = [](const auto& map) {
      return [&map](int rank) { return map.count(rank) != 0; };
    };
    return std::all_of(expected_.begin(), expected_.end(), came(records_)) &&
           (every_record_ || std::all_of(nodes_.begin(), nodes_.end(), came(digests_)));
  }
  GatheredRecords result() && {
    GatheredRecords g;
    std::sort(summaries_.begin(), summaries_.end(),
              [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
    for (int rank = 0; rank < size_; ++rank) {
      const bool reported = has_summary_[static_cast<std::size_t>(rank)] != 0;
      const auto it = records_.find(rank);
      if (!reported || (expected_.count(rank) != 0 && it == records_.end()))
        g.missing.push_back(rank);
      if (it == records_.end() || !reported) continue;
      g.records.push_back(std::move(it->second.record));
      g.lateness.push_back(std::move(it->second.lateness));
    }
    g.node_digests = std::move(digests_);
    g.summaries = std::move(summaries_);
    return g;
  }

 private:
  struct Arrived {
    RankRecord record;
    std::vector<float> lateness;
  };
  void took(const RankSummary& s) {
    has_summary_[static_cast<std::size_t>(s.number())] = 1;
    nodes_.insert(s.node_rank());
  }
  int size_;
  bool every_record_;
  std::vector<char> has_summary_;
  std::vector<RankSummary> summaries_;
  std::set<int> expected_, nodes_;
  std::map<int, Arrived> records_;
  std::map<int, NodeDigest> digests_;
};

// Rank 0: summaries and records from any rank until all came or
// `deadline`. `pending` when a receive is left that MPI may still write.
void receive(const RankView& p, FinalizeBuffers& b, Collection& c, MpiDeadline deadline,
             bool& pending) {
  while (!c.done()) {
    int flag = 0, tag = 0;
    MPI_Status status;
    const bool arrived = poll_until(deadline, kLibraryPollPause, [&] {
      for (const int t : {kRecordTag, kSummaryTag, kNodeTag}) {
        PMPI_Iprobe(MPI_ANY_SOURCE, t, p.comm, &flag, &status);
        if (flag != 0) {
          tag = t;
          return true;
        }
      }
      return false;
    });
    if (!arrived) return;
    int length = 0;
    PMPI_Get_count(&status, MPI_BYTE, &length);
    b.incoming.resize(static_cast<std::size_t>(length));
    // Not a blocking receive: a large record needs its sender's MPI to
    // progress, which a sender that gave up may never do.
    MPI_Request request;
    if (PMPI_Irecv(b.incoming.data(), length, MPI_BYTE, status.MPI_SOURCE, tag, p.comm, &request) !=
        MPI_SUCCESS)
      return;
    if (!pmpi_complete(request, deadline)) {
      pending = true;
      return;
    }
    if (tag == kSummaryTag) {
      c.add_summary(status.MPI_SOURCE, b.incoming);
    } else if (tag == kNodeTag) {
      c.add_digest(status.MPI_SOURCE, b.incoming);
    } else {
      c.add_record(status.MPI_SOURCE, b.incoming);
    }
  }
}

// The gathered summaries that can be judged, in place: each sound, and in
// its rank's place (a subtree that did not come left its places empty).
void keep_sound(std::vector<RankSummary>& summaries, int size) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    if (sound(summaries[i], size) && summaries[i].number() == static_cast<int>(i))
      summaries[kept++] = summaries[i];
  }
  summaries.resize(kept);
}

// Every rank came: the summaries gathered on rank 0 along a tree
// (tree_gather.h), which judges the ranks and broadcasts whom it asks for
// a record (job_selection.h): the count, then the ranks. False when this
// rank's part did not complete; the world then takes no more collectives.
bool gather_and_ask(const RankView& p, Collectives& world, FinalizeBuffers& b, std::size_t full,
                    MpiDeadline deadline) {
  if (p.rank == 0) b.summaries.assign(static_cast<std::size_t>(p.size), RankSummary{});
  if (!world.account(tree_gather_blocks(p.comm, kSummaryTreeTag, &b.summary, sizeof(RankSummary),
                                        p.rank == 0 ? b.summaries.data() : nullptr, b.summary_tree,
                                        deadline)))
    return false;
  if (p.rank == 0) {
    keep_sound(b.summaries, p.size);
    // A subtree that did not come (a rank under it gave up) is not seen
    // by the ranks in it: -1 tells every rank to send its summary point to
    // point, as when a rank is missing.
    b.asked.clear();
    if (b.summaries.size() == static_cast<std::size_t>(p.size))
      b.asked = ranks_in_full(b.summaries, judge_ranks(b.summaries), full);
    b.asked_count = b.summaries.size() == static_cast<std::size_t>(p.size)
                        ? static_cast<int>(b.asked.size())
                        : -1;
  }
  MPI_Request request;
  const auto count = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Ibcast(&b.asked_count, 1, MPI_INT, 0, c, r);
  };
  if (!world.post(count, request) || !world.finish(request, deadline) || b.asked_count < 0)
    return false;
  b.asked.resize(static_cast<std::size_t>(b.asked_count));
  const auto ranks = [&](MPI_Comm c, MPI_Request* r) {
    return PMPI_Ibcast(b.asked.data(), b.asked_count, MPI_INT, 0, c, r);
  };
  return world.post(ranks, request) && world.finish(request, deadline);
}

bool is_asked(const FinalizeBuffers& b, int rank) {
  return std::binary_search(b.asked.begin(), b.asked.end(), rank);
}

}  // namespace

RecordsMoved move_records(const RankView& p, Collectives& world, FinalizeBuffers& b,
                          const RankRecord& record, const std::vector<float>& lateness,
                          const std::vector<float>& node_lateness, MpiDeadline deadline) {
  const JobOptions& options = *p.session->options;
  const std::size_t full = options.full_ranks;
  // When a rank is missing, the collectives' deadline has passed, and the
  // others' records still get a short window of their own at each stage.
  const auto late = [&] {
    return deadline.or_later(MpiDeadline::after(std::min(options.finalize_timeout_seconds, 5.0)));
  };
  RecordsMoved moved;
  std::optional<NodeDigest> digest;
  if (!every_record(p.size, full))
    digest = node_digest_of(p, b, record, node_lateness, late(), moved.pending);
  b.summary = summary_of(record, node_first_rank(p));
  const bool gathered = world.open() && gather_and_ask(p, world, b, full, deadline);
  const MpiDeadline records_deadline = late();
  if (p.rank != 0) {
    if (digest) {
      b.digest = text_of(to_wire(*digest));
      moved.sent = send_to_rank0(p, b.digest.data(), b.digest.size(), kNodeTag, records_deadline,
                                 moved.pending);
    }
    bool asked = gathered && is_asked(b, p.rank);
    if (!gathered) {
      moved.sent = send_to_rank0(p, &b.summary, sizeof(b.summary), kSummaryTag, records_deadline,
                                 moved.pending) &&
                   moved.sent;
      asked = every_record(p.size, full);
    }
    if (moved.sent && asked) {
      moved.sent = send_record(p, b, wire_of(record, lateness), records_deadline, moved.pending);
    }
    return moved;
  }
  Collection collection(p.size, full);
  if (gathered) {
    for (int rank : b.asked) collection.expect(rank);
    collection.take_summaries(std::move(b.summaries), true);
  } else {
    keep_sound(b.summaries, p.size);
    collection.take_summaries(std::move(b.summaries), false);
    collection.add_summary(
        0, std::string(reinterpret_cast<const char*>(&b.summary), sizeof(b.summary)));
  }
  collection.add_own(record, lateness, std::move(digest));
  receive(p, b, collection, records_deadline, moved.pending);
  moved.gathered = std::move(collection).result();
  return moved;
}

}  // namespace corenoise

// MpiEnvironment on an MPI library: compiled once per family against that
// family's <mpi.h> and libmpi, as libcorenoise-mpi-<family>.so, which
// mpi_library.cpp opens. With family_*.cpp, the only code of the project
// that includes <mpi.h>.
//
// Thread level: MPI_THREAD_FUNNELED. Every MPI call of the commands is made by
// the main thread; probe threads never touch MPI. FUNNELED (rather than
// SERIALIZED or MULTIPLE) lets MPICH skip its internal locking entirely, and
// that matters for the one call made from another thread: the watchdog's
// MPI_Abort, issued while the main thread is typically blocked inside a
// collective. Under MULTIPLE, MPICH takes its global critical section in
// MPI_Abort and could wait for the blocked main thread; under FUNNELED the
// abort goes straight to the process manager (PMI) and mpiexec kills every
// rank. Strictly, the standard only allows that call under MULTIPLE; we accept
// the deviation because it is the one way to end a hung job from inside, and
// we back it with alarm() + _exit() in case MPI_Abort itself never returns.
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collector/mpi/family_hooks.h"
#include "collector/mpi/mpi_deadline.h"
#include "collector/mpi/mpi_environment.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

// The communicators and windows, freed before MPI_Finalize.
struct Comms {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm leaders = MPI_COMM_NULL;     // MPI_COMM_NULL on non-leaders
  std::vector<MPI_Win> shared_windows;  // node_shared_memory's
};

// Turns an MPI return code into an exception naming the call.
void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof text, "MPI error code %d", rc);
  }
  throw MpiError(std::string(call) + " failed: " + text);
}

int to_int_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw std::length_error(std::string(what) + ": " + std::to_string(n) +
                            " elements exceed MPI's int count limit (2^31-1)");
  }
  return static_cast<int>(n);
}

// MPI_Op_create's user function receives no user-data pointer, so the C++
// merge function of the reduction in progress is passed through this
// process-wide pointer: set just before MPI_Allreduce, cleared just after.
// A process-wide atomic (not thread_local) because MPICH may run the op on a
// progress thread; there is never more than one reduction in flight, since
// all MPI calls come from the main thread. An exception thrown by the merge
// must not unwind through MPI's C frames: it is parked and rethrown after
// the call returns.
std::atomic<const RecordMerge*> g_current_merge{nullptr};
std::exception_ptr g_merge_error;

extern "C" void merge_trampoline(void* in, void* inout, int* len, MPI_Datatype*) {
  const RecordMerge* merge = g_current_merge.load(std::memory_order_acquire);
  if (merge == nullptr || g_merge_error) return;
  try {
    (*merge)(static_cast<const std::byte*>(in), static_cast<std::byte*>(inout),
             static_cast<std::size_t>(*len));
  } catch (...) {
    g_merge_error = std::current_exception();
  }
}

// Completes a nonblocking collective, sleeping between polls
// (mpi_deadline.h): a rank with nothing to do must not take CPU time from a
// core being measured. A millisecond is nothing next to a round. No
// deadline: the command's watchdog ends a job that hangs.
void wait_sleeping(MPI_Request& request, const char* call) {
  int code = MPI_SUCCESS;
  complete_by(
      request, MpiDeadline::never(), std::chrono::milliseconds(1),
      [](MPI_Request& r, int& done) { return MPI_Test(&r, &done, MPI_STATUS_IGNORE); }, &code);
  check(code, call);
}

// Completes a nonblocking collective: sleeping between polls where other
// ranks may be measuring (node collectives), at full speed where nobody is
// (the leaders' reduction, after the rounds).
enum class Wait { sleeping, polling };
void wait_for(MPI_Request& request, Wait how, const char* call) {
  if (how == Wait::sleeping) {
    wait_sleeping(request, call);
  } else {
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), call);
  }
}

// Rank 0 of `comm` (of `members` ranks) gets every rank's blob, in rank
// order (sizes may differ; the total must stay under 2 GiB); the others get
// an empty vector.
std::vector<std::vector<std::byte>> gather_blobs_to_first(MPI_Comm comm, bool first, int members,
                                                          std::span<const std::byte> blob,
                                                          Wait how) {
  const int bytes = to_int_count(blob.size(), "gather of blobs");
  std::vector<int> sizes(first ? members : 0);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Igather(&bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm, &request),
        "MPI_Igather");
  wait_for(request, how, "MPI_Igather");
  std::vector<int> offsets(sizes.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    offsets[i] = to_int_count(total, "gather of blobs, total");
    total += static_cast<std::size_t>(sizes[i]);
  }
  // A root that throws here leaves the others waiting in MPI_Igatherv; the
  // command's watchdog then ends the job with a message.
  if (first) to_int_count(total, "gather of blobs, total");
  std::vector<std::byte> all(total);
  check(MPI_Igatherv(blob.data(), bytes, MPI_BYTE, all.data(), sizes.data(), offsets.data(),
                     MPI_BYTE, 0, comm, &request),
        "MPI_Igatherv");
  wait_for(request, how, "MPI_Igatherv");
  std::vector<std::vector<std::byte>> blobs(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto* begin = all.data() + offsets[i];
    blobs[i].assign(begin, begin + sizes[i]);
  }
  return blobs;
}

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<std::uint64_t>() {
  return MPI_UINT64_T;
}

template <typename T>
void allreduce(MPI_Comm comm, std::span<T> values, MPI_Op op, std::uint64_t& bytes_sent) {
  if (values.empty()) return;
  const int count = to_int_count(values.size(), "allreduce");
  check(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, mpi_type<T>(), op, comm),
        "MPI_Allreduce");
  bytes_sent += values.size_bytes();
}

class LibraryEnvironment final : public MpiEnvironment {
 public:
  LibraryEnvironment(int* argc, char*** argv);
  ~LibraryEnvironment() override;

  void finalize(double seconds, int exit_code) override;
  void barrier_world() override;
  void barrier_node() override;
  void broadcast_node(std::vector<std::byte>& blob) override;
  std::vector<std::vector<std::byte>> gather_node_blobs(std::span<const std::byte> blob) override;
  std::span<std::byte> node_shared_memory(std::size_t bytes) override;
  void barrier_leaders() override;
  bool any_leader_failed(bool failed) override;
  double common_start_time(double margin_seconds) override;
  void allreduce_sum(std::span<double> values) override;
  void allreduce_min(std::span<double> values) override;
  void allreduce_max(std::span<double> values) override;
  void allreduce_sum(std::span<std::uint64_t> values) override;
  void allreduce_min(std::span<std::uint64_t> values) override;
  void allreduce_max(std::span<std::uint64_t> values) override;
  void allreduce_records(std::span<std::byte> data, std::size_t record_size,
                         const RecordMerge& merge, bool commutative) override;
  std::vector<std::byte> gather_records(std::span<const std::byte> record) override;
  std::vector<std::vector<std::byte>> gather_blobs(std::span<const std::byte> blob) override;
  void broadcast(std::vector<std::byte>& blob) override;
  void start_watchdog(double seconds, const std::string& what) override;
  void cancel_watchdog() override;

 private:
  void init();
  void free_communicators();
  void require_leader(const char* what) const;
  void watchdog_main(double seconds, std::string what);
  bool roll_call(bool failed);
  std::string roll_call_waiting_for();

  std::unique_ptr<Comms> comms_;
  // Leader 0 only: each node's MPI_Get_processor_name, by node index, for
  // the watchdog's message.
  std::vector<std::string> node_names_;

  // Watchdog state: guarded by watchdog_mutex_.
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_cv_;
  bool watchdog_cancelled_ = false;
  std::thread watchdog_;
  // Leader 0's roll call: whether one is in progress, and 1 for each node
  // index it has not heard from yet, for the watchdog thread to name.
  bool roll_call_active_ = false;
  std::vector<char> roll_call_waiting_;
  // Leader 0's receives of the roll call (see roll_call).
  std::vector<std::uint8_t> roll_call_flags_;
  std::vector<MPI_Request> roll_call_requests_;
};

}  // namespace

LibraryEnvironment::LibraryEnvironment(int* argc, char*** argv)
    : comms_(std::make_unique<Comms>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) throw std::logic_error("MpiEnvironment: MPI is already initialized");
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &layout_.thread_level), "MPI_Init_thread");
  try {
    init();
  } catch (...) {
    // The destructor will not run: leave MPI cleanly so the error is printed
    // instead of MPICH complaining about a missing MPI_Finalize.
    if (comms_->leaders != MPI_COMM_NULL) MPI_Comm_free(&comms_->leaders);
    if (comms_->node != MPI_COMM_NULL) MPI_Comm_free(&comms_->node);
    finalize_family();
    throw;
  }
}

void LibraryEnvironment::init() {
  // Errors come back as return codes (and so as exceptions) instead of
  // MPICH's default of aborting the job with a message of its own.
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &layout_.world_rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &layout_.world_size), "MPI_Comm_size");
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  check(MPI_Get_library_version(version, &length), "MPI_Get_library_version");
  const std::string_view text(version, static_cast<std::size_t>(length));
  layout_.library_version = std::string(text.substr(0, text.find_first_of("\n,")));

  // key = world rank: node-local rank 0 is the node's lowest world rank.
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, layout_.world_rank, MPI_INFO_NULL,
                            &comms_->node),
        "MPI_Comm_split_type");
  check(MPI_Comm_set_errhandler(comms_->node, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comms_->node, &layout_.node_rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comms_->node, &layout_.node_size), "MPI_Comm_size");

  // key = world rank again: leader numbering follows world rank order, so
  // world rank 0 leads node 0.
  check(MPI_Comm_split(MPI_COMM_WORLD, layout_.node_rank == 0 ? 0 : MPI_UNDEFINED,
                       layout_.world_rank, &comms_->leaders),
        "MPI_Comm_split");
  int node[2] = {0, 1};  // {index, count}, known to leaders first
  if (comms_->leaders != MPI_COMM_NULL) {
    check(MPI_Comm_set_errhandler(comms_->leaders, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comms_->leaders, &node[0]), "MPI_Comm_rank");
    check(MPI_Comm_size(comms_->leaders, &node[1]), "MPI_Comm_size");
  }
  check(MPI_Bcast(node, 2, MPI_INT, 0, comms_->node), "MPI_Bcast");
  layout_.node_index = node[0];
  layout_.node_count = node[1];

  // The node names leader 0's watchdog gives (roll_call): a few bytes a node.
  if (comms_->leaders != MPI_COMM_NULL) {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int name_length = 0;
    check(MPI_Get_processor_name(name, &name_length), "MPI_Get_processor_name");
    const auto names = gather_blobs_to_first(
        comms_->leaders, layout_.node_index == 0, layout_.node_count,
        std::as_bytes(std::span(name, static_cast<std::size_t>(name_length))), Wait::polling);
    for (const auto& blob : names) {
      node_names_.emplace_back(reinterpret_cast<const char*>(blob.data()), blob.size());
    }
  }
}

LibraryEnvironment::~LibraryEnvironment() {
  cancel_watchdog();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  free_communicators();
  finalize_family();
}

void LibraryEnvironment::free_communicators() {
  for (MPI_Win& window : comms_->shared_windows) MPI_Win_free(&window);
  comms_->shared_windows.clear();
  if (comms_->leaders != MPI_COMM_NULL) MPI_Comm_free(&comms_->leaders);
  if (comms_->node != MPI_COMM_NULL) MPI_Comm_free(&comms_->node);
}

void LibraryEnvironment::finalize(double seconds, int exit_code) {
  cancel_watchdog();
  free_communicators();
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread guard([&] {
    std::unique_lock lock(mutex);
    if (finished.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done; })) {
      return;
    }
    const std::string message = "corenoise: MPI_Finalize did not return within " +
                                std::to_string(static_cast<int>(seconds)) + " s on rank " +
                                std::to_string(layout_.world_rank) +
                                "; the work is done, exiting with status " +
                                std::to_string(exit_code) + "\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message.data(), message.size());
    _exit(exit_code);
  });
  // Every rank has received every other rank's last messages before any
  // leaves its endpoints unflushed (mpich_ucx_finalize.h); under the deadline.
  MPI_Barrier(MPI_COMM_WORLD);
  finalize_family();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  finished.notify_all();
  guard.join();
}

void LibraryEnvironment::require_leader(const char* what) const {
  if (!is_leader()) {
    throw std::logic_error(std::string("MpiEnvironment::") + what +
                           " is a leader collective, called on non-leader rank " +
                           std::to_string(layout_.world_rank));
  }
}

void LibraryEnvironment::barrier_world() {
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  wait_sleeping(request, "MPI_Ibarrier");
}

void LibraryEnvironment::barrier_node() {
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comms_->node, &request), "MPI_Ibarrier");
  wait_sleeping(request, "MPI_Ibarrier");
}

void LibraryEnvironment::broadcast_node(std::vector<std::byte>& blob) {
  std::uint64_t size = blob.size();
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, comms_->node, &request), "MPI_Ibcast");
  wait_sleeping(request, "MPI_Ibcast");
  const int bytes = to_int_count(size, "broadcast_node");
  if (layout_.node_rank != 0) blob.resize(size);
  check(MPI_Ibcast(blob.data(), bytes, MPI_BYTE, 0, comms_->node, &request), "MPI_Ibcast");
  wait_sleeping(request, "MPI_Ibcast");
  if (layout_.node_rank == 0) bytes_sent_ += sizeof size + size;
}

std::vector<std::vector<std::byte>> LibraryEnvironment::gather_node_blobs(
    std::span<const std::byte> blob) {
  bytes_sent_ += sizeof(int) + blob.size();
  return gather_blobs_to_first(comms_->node, layout_.node_rank == 0, layout_.node_size, blob,
                               Wait::sleeping);
}

std::span<std::byte> LibraryEnvironment::node_shared_memory(std::size_t bytes) {
  // The leader allocates it all, so that it is one contiguous segment, with
  // room to align it: MPICH gives a single rank plain heap memory.
  constexpr std::size_t kAlign = 64;
  const auto local = static_cast<MPI_Aint>(layout_.node_rank == 0 ? bytes + kAlign : 0);
  void* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  check(MPI_Win_allocate_shared(local, 1, MPI_INFO_NULL, comms_->node, &base, &window),
        "MPI_Win_allocate_shared");
  comms_->shared_windows.push_back(window);
  MPI_Aint size = 0;
  int unit = 0;
  check(MPI_Win_shared_query(window, 0, &size, &unit, &base), "MPI_Win_shared_query");
  // Every rank must use the same bytes: the leader's alignment offset.
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  std::uint64_t offset = (kAlign - address % kAlign) % kAlign;
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibcast(&offset, 1, MPI_UINT64_T, 0, comms_->node, &request), "MPI_Ibcast");
  wait_sleeping(request, "MPI_Ibcast");
  if (static_cast<std::size_t>(size) < bytes + offset || (address + offset) % 8 != 0) {
    throw MpiError("MPI_Win_allocate_shared: segment of " + std::to_string(size) +
                   " bytes cannot hold " + std::to_string(bytes) + " aligned bytes");
  }
  auto* first = static_cast<std::byte*>(base) + offset;
  if (layout_.node_rank == 0) std::memset(first, 0, bytes);
  barrier_node();  // nobody uses it before it is zeroed
  return {first, bytes};
}

void LibraryEnvironment::barrier_leaders() {
  require_leader("barrier_leaders");
  roll_call(false);
}

bool LibraryEnvironment::any_leader_failed(bool failed) {
  require_leader("any_leader_failed");
  return roll_call(failed);
}

// Each leader sends its flag to leader 0, which receives them one by one
// (so that it knows who has not answered), ORs them and broadcasts the
// result. Every message is matched before the call returns, so nothing is
// left in flight at MPI_Finalize. The waits poll without sleeping, as the
// MPI_Barrier and MPI_Allreduce this replaced did: a leader is here once its
// own node's round is over, and the start of the next round must not wait
// for a sleeping poll. The receive buffers are members, so that a receive
// still posted when an MPI error throws out of here never writes into freed
// memory (the watchdog then ends the job).
bool LibraryEnvironment::roll_call(bool failed) {
  constexpr int kRollCallTag = 0x636e;  // the leaders' communicator has no other messages
  std::uint8_t flag = failed ? 1 : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  if (layout_.node_index == 0) {
    const auto count = static_cast<std::size_t>(layout_.node_count);
    roll_call_flags_.assign(count, 0);
    roll_call_requests_.assign(count, MPI_REQUEST_NULL);
    {
      std::lock_guard lock(watchdog_mutex_);
      roll_call_waiting_.assign(count, 1);
      roll_call_waiting_[0] = 0;
      roll_call_active_ = true;
    }
    // Cleared however this ends, so that a later watchdog never names the
    // nodes of a roll call that is over.
    struct Done {
      LibraryEnvironment& env;
      ~Done() {
        std::lock_guard lock(env.watchdog_mutex_);
        env.roll_call_active_ = false;
      }
    } done{*this};
    for (std::size_t i = 1; i < count; ++i) {
      check(MPI_Irecv(&roll_call_flags_[i], 1, MPI_UINT8_T, static_cast<int>(i), kRollCallTag,
                      comms_->leaders, &roll_call_requests_[i]),
            "MPI_Irecv");
    }
    std::vector<int> arrived(count);
    for (;;) {
      int outcount = 0;
      check(MPI_Testsome(static_cast<int>(count), roll_call_requests_.data(), &outcount,
                         arrived.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
      if (outcount == MPI_UNDEFINED) break;  // every request answered
      if (outcount > 0) {
        std::lock_guard lock(watchdog_mutex_);
        for (int k = 0; k < outcount; ++k) roll_call_waiting_[arrived[k]] = 0;
      }
    }
    for (const std::uint8_t f : roll_call_flags_) flag |= f;
  } else {
    check(MPI_Isend(&flag, 1, MPI_UINT8_T, 0, kRollCallTag, comms_->leaders, &request),
          "MPI_Isend");
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait (MPI_Isend)");
    bytes_sent_ += sizeof flag;
  }
  check(MPI_Ibcast(&flag, 1, MPI_UINT8_T, 0, comms_->leaders, &request), "MPI_Ibcast");
  check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait (MPI_Ibcast)");
  return flag != 0;
}

// ", waiting for node 1 (cn-node2), ..." while leader 0 is in a roll call;
// empty otherwise. Called on the watchdog thread; touches no MPI.
std::string LibraryEnvironment::roll_call_waiting_for() {
  constexpr std::size_t kNamed = 8;  // the rest are counted
  std::lock_guard lock(watchdog_mutex_);
  if (!roll_call_active_) return {};
  std::string text;
  std::size_t waiting = 0;
  for (std::size_t node = 0; node < roll_call_waiting_.size(); ++node) {
    if (roll_call_waiting_[node] == 0 || ++waiting > kNamed) continue;
    text += std::string(waiting == 1 ? ", waiting for " : ", ") + "node " + std::to_string(node);
    if (node < node_names_.size()) text += " (" + node_names_[node] + ")";
  }
  if (waiting > kNamed) text += " and " + std::to_string(waiting - kNamed) + " more nodes";
  return text;
}

double LibraryEnvironment::common_start_time(double margin_seconds) {
  require_leader("common_start_time");
  double start = layout_.node_index == 0 ? unix_seconds_now() + margin_seconds : 0.0;
  check(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, comms_->leaders), "MPI_Bcast");
  if (layout_.node_index == 0) bytes_sent_ += sizeof start;
  return start;
}

void LibraryEnvironment::allreduce_sum(std::span<double> values) {
  require_leader("allreduce_sum");
  allreduce(comms_->leaders, values, MPI_SUM, bytes_sent_);
}
void LibraryEnvironment::allreduce_min(std::span<double> values) {
  require_leader("allreduce_min");
  allreduce(comms_->leaders, values, MPI_MIN, bytes_sent_);
}
void LibraryEnvironment::allreduce_max(std::span<double> values) {
  require_leader("allreduce_max");
  allreduce(comms_->leaders, values, MPI_MAX, bytes_sent_);
}
void LibraryEnvironment::allreduce_sum(std::span<std::uint64_t> values) {
  require_leader("allreduce_sum");
  allreduce(comms_->leaders, values, MPI_SUM, bytes_sent_);
}
void LibraryEnvironment::allreduce_min(std::span<std::uint64_t> values) {
  require_leader("allreduce_min");
  allreduce(comms_->leaders, values, MPI_MIN, bytes_sent_);
}
void LibraryEnvironment::allreduce_max(std::span<std::uint64_t> values) {
  require_leader("allreduce_max");
  allreduce(comms_->leaders, values, MPI_MAX, bytes_sent_);
}

void LibraryEnvironment::allreduce_records(std::span<std::byte> data, std::size_t record_size,
                                           const RecordMerge& merge, bool commutative) {
  require_leader("allreduce_records");
  if (record_size == 0 || data.size() % record_size != 0) {
    throw std::invalid_argument("allreduce_records: " + std::to_string(data.size()) +
                                " bytes is not a whole number of " + std::to_string(record_size) +
                                "-byte records");
  }
  if (data.empty()) return;
  const int record_bytes = to_int_count(record_size, "allreduce_records record size");
  const int records = to_int_count(data.size() / record_size, "allreduce_records");

  // One MPI element = one record, so MPI never splits a record between two
  // calls of the merge and `*len` is a record count.
  MPI_Datatype type = MPI_DATATYPE_NULL;
  check(MPI_Type_contiguous(record_bytes, MPI_BYTE, &type), "MPI_Type_contiguous");
  MPI_Op op = MPI_OP_NULL;
  int rc = MPI_Type_commit(&type);
  if (rc == MPI_SUCCESS) rc = MPI_Op_create(&merge_trampoline, commutative ? 1 : 0, &op);
  if (rc == MPI_SUCCESS) {
    g_merge_error = nullptr;
    g_current_merge.store(&merge, std::memory_order_release);
    rc = MPI_Allreduce(MPI_IN_PLACE, data.data(), records, type, op, comms_->leaders);
    g_current_merge.store(nullptr, std::memory_order_release);
  }
  const char* failed_call = rc == MPI_SUCCESS ? "" : "MPI_Allreduce (records)";
  if (op != MPI_OP_NULL) MPI_Op_free(&op);
  MPI_Type_free(&type);
  check(rc, failed_call);
  if (g_merge_error) std::rethrow_exception(std::exchange(g_merge_error, nullptr));
  bytes_sent_ += data.size();
}

std::vector<std::byte> LibraryEnvironment::gather_records(std::span<const std::byte> record) {
  require_leader("gather_records");
  const int bytes = to_int_count(record.size(), "gather_records");
  std::vector<std::byte> all;
  if (layout_.node_index == 0) {
    all.resize(record.size() * static_cast<std::size_t>(layout_.node_count));
  }
  check(MPI_Gather(record.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, 0, comms_->leaders),
        "MPI_Gather");
  bytes_sent_ += record.size();
  return all;
}

std::vector<std::vector<std::byte>> LibraryEnvironment::gather_blobs(
    std::span<const std::byte> blob) {
  require_leader("gather_blobs");
  bytes_sent_ += sizeof(int) + blob.size();
  return gather_blobs_to_first(comms_->leaders, layout_.node_index == 0, layout_.node_count, blob,
                               Wait::polling);
}

void LibraryEnvironment::broadcast(std::vector<std::byte>& blob) {
  require_leader("broadcast");
  std::uint64_t size = blob.size();
  check(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comms_->leaders), "MPI_Bcast");
  const int bytes = to_int_count(size, "broadcast");
  if (layout_.node_index != 0) blob.resize(size);
  check(MPI_Bcast(blob.data(), bytes, MPI_BYTE, 0, comms_->leaders), "MPI_Bcast");
  if (layout_.node_index == 0) bytes_sent_ += sizeof size + size;
}

void LibraryEnvironment::start_watchdog(double seconds, const std::string& what) {
  cancel_watchdog();
  if (!(seconds > 0)) return;
  watchdog_cancelled_ = false;
  watchdog_ = std::thread(&LibraryEnvironment::watchdog_main, this, seconds, what);
}

void LibraryEnvironment::cancel_watchdog() {
  if (!watchdog_.joinable()) return;
  {
    std::lock_guard lock(watchdog_mutex_);
    watchdog_cancelled_ = true;
  }
  watchdog_cv_.notify_all();
  watchdog_.join();
}

void LibraryEnvironment::watchdog_main(double seconds, std::string what) {
  // Leader 0 knows whom a roll call waits for: it speaks first.
  const double grace = layout_.world_rank == 0 ? 0 : 1;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds + grace));
  {
    std::unique_lock lock(watchdog_mutex_);
    if (watchdog_cv_.wait_until(lock, deadline, [this] { return watchdog_cancelled_; })) return;
  }
  std::ostringstream message;
  message << "corenoise: " << what << " did not finish within " << seconds << " s on rank "
          << layout_.world_rank << " (node " << layout_.node_index << ")" << roll_call_waiting_for()
          << "; aborting the job\n";
  const std::string text = message.str();
  // One write(2): the line must not interleave with other ranks' output, and
  // stdio may be mid-use by the (stuck) main thread.
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, text.data(), text.size());
  // If MPI_Abort itself hangs (a wedged process manager, or a node cut off
  // from it: tests/cluster's NodeCutOffDuringASweep), SIGALRM's default
  // action still ends this process, and mpiexec tears down the rest. 10 s:
  // a healthy MPI_Abort ends every rank within a second here (the 300 ms
  // below included); past that the process manager is not coming.
  ::alarm(10);
  // MPI_Abort makes the process manager kill every rank at once, and hydra
  // can go down before it has forwarded the line just written (seen: one run
  // in ten lost it). A moment's grace lets the message out.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  MPI_Abort(MPI_COMM_WORLD, 1);
  ::_exit(1);
}

}  // namespace corenoise

// The plugin's entry points (mpi_library.cpp), the only symbols it exports
// besides the MPICH plugin's ucp_disconnect_nb.
//
// The MpiEnvironment interface this plugin was built for: a hash of
// mpi_environment.h, which the loader compares with its own before calling
// anything, so that a plugin of another build is refused.
extern "C" [[gnu::visibility("default")]] const char* corenoise_mpi_plugin_interface() {
  return CORENOISE_MPI_INTERFACE;
}

// A new environment, MPI initialised; throws MpiError as the constructor
// does. The caller owns it.
extern "C" [[gnu::visibility("default")]] corenoise::MpiEnvironment* corenoise_mpi_environment_open(
    int* argc, char*** argv) {
  return new corenoise::LibraryEnvironment(argc, argv);
}

#include "collector/job/rank/tree_gather.h"

#include <cstdint>
#include <cstring>

#include "collector/job/rank/pmpi_completion.h"

namespace corenoise {
namespace {

// The binomial tree rooted at 0: rank r's subtree is [r, r + span(r)),
// span(r) its lowest set bit (the job's size for 0), cut at the size;
// its parent r - span(r); its children r + 2^k for 2^k < span(r).
std::size_t span_of(int rank, int size) {
  if (rank == 0) return static_cast<std::size_t>(size);
  return static_cast<std::size_t>(rank & -rank);
}

std::size_t subtree_size(int rank, int size) {
  const std::size_t end = static_cast<std::size_t>(rank) + span_of(rank, size);
  return (end < static_cast<std::size_t>(size) ? end : static_cast<std::size_t>(size)) -
         static_cast<std::size_t>(rank);
}

int children_of(int rank, int size) {
  int children = 0;
  for (std::size_t step = 1; step < span_of(rank, size); step <<= 1) {
    if (static_cast<std::size_t>(rank) + step < static_cast<std::size_t>(size)) ++children;
  }
  return children;
}

// One message from any child, probed then received into `buffers.incoming`
// (so that only a matched message is ever posted for). False when none
// came by `deadline` or the receive did not complete (then `pending`).
bool receive_child(MPI_Comm comm, int tag, TreeBuffers& buffers, MpiDeadline deadline, int& child,
                   bool& pending) {
  int flag = 0;
  MPI_Status status;
  if (!poll_until(deadline, kLibraryPollPause, [&] {
        PMPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &status);
        return flag != 0;
      }))
    return false;
  int length = 0;
  PMPI_Get_count(&status, MPI_BYTE, &length);
  buffers.incoming.resize(static_cast<std::size_t>(length));
  MPI_Request request;
  if (PMPI_Irecv(buffers.incoming.data(), length, MPI_BYTE, status.MPI_SOURCE, tag, comm,
                 &request) != MPI_SUCCESS)
    return false;
  if (!pmpi_complete(request, deadline)) {
    pending = true;
    return false;
  }
  child = status.MPI_SOURCE;
  return true;
}

// Each child's subtree as it comes, handed to `take(child)` in
// `buffers.incoming`; incomplete when one did not come by `deadline`.
template <class Take>
TreeGathered receive_children(MPI_Comm comm, int tag, int rank, int size, TreeBuffers& buffers,
                              MpiDeadline deadline, Take&& take) {
  TreeGathered result{true, false};
  for (int left = children_of(rank, size); left > 0; --left) {
    int child = 0;
    if (!receive_child(comm, tag, buffers, deadline, child, result.pending)) {
      result.complete = false;
      break;
    }
    take(child);
  }
  return result;
}

// This rank's subtree, in `buffers.up`, to its parent.
void send_up(MPI_Comm comm, int tag, int rank, TreeBuffers& buffers, MpiDeadline deadline,
             TreeGathered& result) {
  const int parent = rank - (rank & -rank);
  MPI_Request request;
  if (PMPI_Isend(buffers.up.data(), static_cast<int>(buffers.up.size()), MPI_BYTE, parent, tag,
                 comm, &request) != MPI_SUCCESS) {
    result.complete = false;
    return;
  }
  result.pending = !pmpi_complete(request, deadline);
  result.complete = result.complete && !result.pending;
}

// A text's frame: its rank and length, then its bytes.
void append_frame(std::string& to, int rank, const std::string& text) {
  const std::int32_t head[2] = {rank, static_cast<std::int32_t>(text.size())};
  to.append(reinterpret_cast<const char*>(head), sizeof(head));
  to.append(text);
}

}  // namespace

TreeGathered tree_gather_blocks(MPI_Comm comm, int tag, const void* mine, std::size_t block,
                                void* all, TreeBuffers& buffers, MpiDeadline deadline) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  // Rank 0 gathers into `all`; the others into their subtree's buffer.
  if (rank != 0) buffers.up.assign(subtree_size(rank, size) * block, '\0');
  char* const into = rank == 0 ? static_cast<char*>(all) : buffers.up.data();
  std::memcpy(into, mine, block);
  TreeGathered result = receive_children(comm, tag, rank, size, buffers, deadline, [&](int child) {
    const std::size_t at = static_cast<std::size_t>(child - rank) * block;
    const std::size_t bytes = subtree_size(child, size) * block;
    if (buffers.incoming.size() == bytes) std::memcpy(into + at, buffers.incoming.data(), bytes);
  });
  if (rank != 0 && !result.pending) send_up(comm, tag, rank, buffers, deadline, result);
  return result;
}

TreeGathered tree_gather_texts(MPI_Comm comm, int tag, const std::string& mine,
                               std::vector<std::string>& texts, std::vector<int>& ranks,
                               TreeBuffers& buffers, MpiDeadline deadline) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  std::string frames;
  append_frame(frames, rank, mine);
  TreeGathered result = receive_children(comm, tag, rank, size, buffers, deadline,
                                         [&](int) { frames += buffers.incoming; });
  if (rank != 0) {
    buffers.up = std::move(frames);
    if (!result.pending) send_up(comm, tag, rank, buffers, deadline, result);
    return result;
  }
  // Rank 0 reads the frames; one cut short ends them.
  for (std::size_t at = 0; at + 2 * sizeof(std::int32_t) <= frames.size();) {
    std::int32_t head[2];
    std::memcpy(head, frames.data() + at, sizeof(head));
    at += sizeof(head);
    if (head[1] < 0 || at + static_cast<std::size_t>(head[1]) > frames.size()) break;
    ranks.push_back(head[0]);
    texts.emplace_back(frames, at, static_cast<std::size_t>(head[1]));
    at += static_cast<std::size_t>(head[1]);
  }
  return result;
}

}  // namespace corenoise

#include "collector/job/rank/comm_ranks.h"

#include <cstdint>

namespace corenoise {

int CommRanks::on_free(MPI_Comm, int, void* value, void* self) {
  const auto index = reinterpret_cast<std::uintptr_t>(value);
  if (index < kEntries) static_cast<CommRanks*>(self)->stale_[index].store(true);
  return MPI_SUCCESS;
}

CommRanks::Entry& CommRanks::entry(MPI_Comm comm) {
  static Entry none;  // MPI_COMM_NULL: nothing to translate, no attribute to set
  if (comm == MPI_COMM_NULL) return none;
  if (entries_[last_].comm == comm && !stale_[last_].load(std::memory_order_acquire))
    return entries_[last_];
  for (std::size_t i = 0; i < kEntries; ++i) {
    if (entries_[i].comm != comm) continue;
    // The same handle as a freed communicator's: a new one, built afresh.
    if (stale_[i].load(std::memory_order_acquire)) build(i, comm);
    last_ = i;
    return entries_[i];
  }
  const std::size_t victim = next_victim_;
  next_victim_ = (next_victim_ + 1) % kEntries;
  // The evicted communicator is alive (not stale): its attribute goes with
  // its entry, so that each live communicator's attribute names its own.
  if (entries_[victim].comm != MPI_COMM_NULL && !stale_[victim].load() &&
      keyval_ != MPI_KEYVAL_INVALID)
    PMPI_Comm_delete_attr(entries_[victim].comm, keyval_);
  build(victim, comm);
  last_ = victim;
  return entries_[victim];
}

void CommRanks::build(std::size_t index, MPI_Comm comm) {
  if (keyval_ == MPI_KEYVAL_INVALID)
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &CommRanks::on_free, &keyval_, this);
  Entry& e = entries_[index];
  e = Entry{};
  e.comm = comm;
  stale_[index].store(false);
  if (keyval_ != MPI_KEYVAL_INVALID)
    PMPI_Comm_set_attr(comm, keyval_, reinterpret_cast<void*>(static_cast<std::uintptr_t>(index)));
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter != 0) return;
  int result = MPI_UNEQUAL;
  PMPI_Comm_compare(comm, MPI_COMM_WORLD, &result);
  // MPI_SIMILAR: every rank of the job, in another order (a Cartesian
  // communicator that reordered): its collectives are steps all the same.
  e.spans_job = result == MPI_IDENT || result == MPI_CONGRUENT || result == MPI_SIMILAR;
  e.identity = result == MPI_IDENT || result == MPI_CONGRUENT;
  if (e.identity) return;
  int size = 0;
  PMPI_Comm_size(comm, &size);
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> ranks(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
  e.to_job.assign(ranks.size(), -1);
  PMPI_Group_translate_ranks(group, size, ranks.data(), world, e.to_job.data());
  for (int& r : e.to_job) r = r == MPI_UNDEFINED ? -1 : r;
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
}

int CommRanks::job_rank(MPI_Comm comm, int rank) {
  if (rank < 0 || rank == MPI_PROC_NULL || rank == MPI_ANY_SOURCE) return -1;
  if (comm == MPI_COMM_WORLD) return rank;
  const Entry& e = entry(comm);
  if (e.identity) return rank;
  const auto index = static_cast<std::size_t>(rank);
  return index < e.to_job.size() ? e.to_job[index] : -1;
}

bool CommRanks::spans_job(MPI_Comm comm) { return comm == MPI_COMM_WORLD || entry(comm).spans_job; }

bool CommRanks::same_ranks_as_job(MPI_Comm comm) {
  return comm == MPI_COMM_WORLD || entry(comm).identity;
}

}  // namespace corenoise

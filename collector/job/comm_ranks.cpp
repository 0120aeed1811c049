#include "collector/job/comm_ranks.h"

namespace corenoise {

CommRanks::Entry& CommRanks::entry(MPI_Comm comm) {
  if (entries_[last_].comm == comm) return entries_[last_];
  for (std::size_t i = 0; i < kEntries; ++i) {
    if (entries_[i].comm == comm) {
      last_ = i;
      return entries_[i];
    }
  }
  Entry& e = entries_[next_victim_];
  last_ = next_victim_;
  next_victim_ = (next_victim_ + 1) % kEntries;
  e.comm = comm;
  e.to_job.clear();
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter != 0) {
    e.spans_job = false;
    e.identity = false;
    return e;
  }
  int result = MPI_UNEQUAL;
  PMPI_Comm_compare(comm, MPI_COMM_WORLD, &result);
  e.spans_job = result == MPI_IDENT || result == MPI_CONGRUENT;
  e.identity = e.spans_job;
  if (!e.identity) {
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
  return e;
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

void CommRanks::forget(MPI_Comm comm) {
  for (Entry& e : entries_) {
    if (e.comm == comm) e = Entry{};
  }
}

}  // namespace corenoise

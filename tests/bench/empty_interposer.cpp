// The floor of any PMPI wrapper: the calls message_rate_app makes, each
// passed straight to its PMPI_ name and nothing else. LD_PRELOADed by
// job_call_rate_bench.py beside the runs without and with corenoise's
// library, its cost is what interposing alone adds (a second call through
// the PLT), which no wrapper can go under.
#include <mpi.h>

#define EXPORT extern "C" __attribute__((visibility("default")))

EXPORT int MPI_Barrier(MPI_Comm comm) { return PMPI_Barrier(comm); }

EXPORT int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                         MPI_Comm comm) {
  return PMPI_Allreduce(send, recv, count, type, op, comm);
}

EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                     MPI_Comm comm, MPI_Request* request) {
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                     MPI_Request* request) {
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                       MPI_Status* status) {
  return PMPI_Testany(count, requests, index, flag, status);
}

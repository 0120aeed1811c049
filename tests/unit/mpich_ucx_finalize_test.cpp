#include "collector/mpi/mpich_ucx_finalize.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace corenoise {
namespace {

// The start of MPI_Get_library_version's text for Debian 12's MPICH.
constexpr const char* kDebianMpich =
    "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n"
    "MPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--with-device=ch4:ucx";

TEST(MpichUcxFinalize, DebiansMpichOnUcxNeedsTheWayRound) {
  EXPECT_TRUE(mpi_finalize_needs_unflushed_disconnect(kDebianMpich));
  EXPECT_TRUE(
      mpi_finalize_needs_unflushed_disconnect("MPICH Version:\t4.1.2\nMPICH Device:\tch4:ucx\n"));
  EXPECT_TRUE(mpi_finalize_needs_unflushed_disconnect(
      "MPICH Version:      3.4.3\nMPICH Device:    ch4:ucx\n"));
}

// The barrier was removed in 4.2; other devices and other MPIs never call
// UCX's disconnect from that finalize.
TEST(MpichUcxFinalize, OtherLibrariesKeepTheFlushingClose) {
  EXPECT_FALSE(
      mpi_finalize_needs_unflushed_disconnect("MPICH Version:\t4.2.0\nMPICH Device:\tch4:ucx\n"));
  EXPECT_FALSE(
      mpi_finalize_needs_unflushed_disconnect("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ofi\n"));
  EXPECT_FALSE(mpi_finalize_needs_unflushed_disconnect(
      "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022"));
  EXPECT_FALSE(
      mpi_finalize_needs_unflushed_disconnect("Intel(R) MPI Library 2021.10 for Linux* OS"));
  EXPECT_FALSE(mpi_finalize_needs_unflushed_disconnect("MPICH Version:\tunknown ch4:ucx"));
  // UCX named only by the configure line: another device.
  EXPECT_FALSE(mpi_finalize_needs_unflushed_disconnect(
      "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ofi\nMPICH configure:\t--with-device=ch4:ucx\n"));
  EXPECT_FALSE(mpi_finalize_needs_unflushed_disconnect(""));
}

// That libmpich binds to this ucp_disconnect_nb rather than libucp's is
// checked on the real plugin: MpiEnvMpich.LibmpichBindsThePluginsUcxDisconnect.

// Armed, a close reports done at once without touching the endpoint.
TEST(MpichUcxFinalize, ArmedTheCloseIsDoneWithoutAFlush) {
  set_unflushed_ucx_disconnect(true);
  EXPECT_EQ(ucp_disconnect_nb(nullptr), nullptr);
  set_unflushed_ucx_disconnect(false);
}

}  // namespace
}  // namespace corenoise

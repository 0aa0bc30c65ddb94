// What of the NCCL backend runs without a GPU: the dtype and reduce-op
// mappings, the mapping of NCCL and CUDA error codes to typed exceptions,
// which libnccl.so.2 the process uses, and the checks a group makes before
// it touches a device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dist/nccl_utils.h"
#include "dtrain/dist/init.h"
#include "dtrain/dist/process_group_nccl.h"
#include "expect_error.h"
#include "multi_process.h"

namespace {

using dtrain::testing::expect_error;

namespace dist = dtrain::dist;
namespace nccl = dtrain::dist::nccl;
using namespace std::chrono_literals;

TEST(NcclUtils, MapsEveryDtype) {
  EXPECT_EQ(nccl::to_nccl(at::kFloat), ncclFloat32);
  EXPECT_EQ(nccl::to_nccl(at::kDouble), ncclFloat64);
  EXPECT_EQ(nccl::to_nccl(at::kHalf), ncclFloat16);
  EXPECT_EQ(nccl::to_nccl(at::kBFloat16), ncclBfloat16);
  EXPECT_EQ(nccl::to_nccl(at::kInt), ncclInt32);
  EXPECT_EQ(nccl::to_nccl(at::kLong), ncclInt64);
  EXPECT_EQ(nccl::to_nccl(at::kByte), ncclUint8);
  try {
    nccl::to_nccl(at::kBool);
    ADD_FAILURE() << "bool was accepted";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("got Bool"), std::string::npos) << e.what();
  }
}

TEST(NcclUtils, MapsEveryReduceOp) {
  EXPECT_EQ(nccl::to_nccl(dist::ReduceOp::kSum), ncclSum);
  EXPECT_EQ(nccl::to_nccl(dist::ReduceOp::kProduct), ncclProd);
  EXPECT_EQ(nccl::to_nccl(dist::ReduceOp::kMin), ncclMin);
  EXPECT_EQ(nccl::to_nccl(dist::ReduceOp::kMax), ncclMax);
  EXPECT_EQ(nccl::to_nccl(dist::ReduceOp::kAvg), ncclAvg);
}

TEST(NcclUtils, CheckNamesExpressionFileLineAndRank) {
  int line = 0;
  try {
    line = __LINE__ + 1;
    DTRAIN_NCCL_CHECK(ncclGetVersion(nullptr), 3, "all_reduce on group 'g'");
    ADD_FAILURE() << "ncclGetVersion(nullptr) succeeded";
  } catch (const dist::NcclUsageError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.code(), ncclInvalidArgument);
    EXPECT_NE(message.find("all_reduce on group 'g': NCCL call `ncclGetVersion(nullptr)` failed "
                           "on rank 3 at "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("test_nccl_utils.cpp:" + std::to_string(line) + ": ncclInvalidArgument"),
              std::string::npos)
        << message;
  }
}

// NCCL's refusal of two ranks on one GPU comes with what to do instead.
TEST(NcclUtils, DuplicateGpuAdvisesSharingOrOneGpuEach) {
  const std::string advice = dtrain::dist::nccl::advice_for(
      "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000");
  EXPECT_NE(advice.find("dtrun --share-gpu"), std::string::npos) << advice;
  EXPECT_NE(advice.find("--bind-devices"), std::string::npos) << advice;
  EXPECT_EQ(dtrain::dist::nccl::advice_for("unhandled system error"), "");
}

TEST(NcclUtils, ErrorCodesMapToTypes) {
  EXPECT_THROW(nccl::throw_nccl_error(ncclRemoteError, "x", "f.cpp", 1, 0, ""),
               dist::NcclRemoteError);
  EXPECT_THROW(nccl::throw_nccl_error(ncclInvalidUsage, "x", "f.cpp", 1, 0, ""),
               dist::NcclUsageError);
  try {
    nccl::throw_nccl_error(ncclSystemError, "ncclCommInitRank(...)", "f.cpp", 7, 1, "");
  } catch (const dist::NcclUsageError&) {
    ADD_FAILURE() << "a system error is not a usage error";
  } catch (const dist::NcclError& e) {
    EXPECT_EQ(e.code(), ncclSystemError);
    EXPECT_NE(std::string(e.what()).find("on rank 1 at f.cpp:7: ncclSystemError"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(nccl::result_name(static_cast<ncclResult_t>(42)), "ncclResult 42");
  try {
    DTRAIN_CUDA_CHECK(cudaErrorInvalidValue, 2, "broadcast");
    ADD_FAILURE() << "no throw";
  } catch (const dist::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast: CUDA call `cudaErrorInvalidValue` failed on "
                                         "rank 2"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaErrorInvalidValue ("), std::string::npos) << e.what();
  }
}

// Note: the toolkit's libnccl.so.2 and the torch wheel's have one SONAME, so
// the process uses one of them (docs/libtorch.md). Both must be NCCL 2 and
// no older than the nccl.h we compiled against.
TEST(NcclUtils, LoadedAndToolkitLibrariesAgree) {
  const int loaded = dist::ProcessGroupNCCL::runtime_version();
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info), 0);
  std::printf("compiled against NCCL %d; loaded %s: NCCL %d\n",
              dist::ProcessGroupNCCL::compiled_version(), info.dli_fname, loaded);
  void* toolkit = dlopen(DTRAIN_TEST_NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(toolkit, nullptr) << dlerror();
  using GetVersion = ncclResult_t (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(toolkit, "ncclGetVersion"));
  ASSERT_NE(get_version, nullptr);
  int linked = 0;
  ASSERT_EQ(get_version(&linked), ncclSuccess);
  std::printf("toolkit %s: NCCL %d\n", DTRAIN_TEST_NCCL_LIBRARY, linked);
  for (const int version : {loaded, linked}) {
    EXPECT_EQ(version / 10000, NCCL_MAJOR) << version;
    EXPECT_GE(version, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, 0)) << version;
  }
}

// CPU tensors: the control-message collectives stage them through the GPU
// (Note [Tensors on a device the backend does not move]) and, with no GPU visible, say so;
// the others refuse them before touching a GPU. Runs with or without one.
TEST(NcclGroup, CpuTensorsAreStagedOrRefusedByName) {
  const auto port = dtrain::testing::free_port();
  auto group = dist::init_process_group({.backend = "nccl",
                                         .init_method = "tcp://127.0.0.1:" + std::to_string(port),
                                         .rank = 0,
                                         .world_size = 1,
                                         .timeout = 10s});
  EXPECT_EQ(group->backend_name(), "nccl");
  at::Tensor t = at::arange(4, at::kFloat);
  if (at::hasCUDA()) {
    dist::all_reduce(t);
    EXPECT_TRUE(t.device().is_cpu());
    EXPECT_TRUE(at::equal(t, at::arange(4, at::kFloat)));
  } else {
    expect_error([&] { dist::all_reduce(t); },
                 "all_reduce(SUM) on group 'default' (nccl), rank 0 of 1: CPU tensors go through "
                 "the group's GPU, but no CUDA device is visible");
  }
  std::vector<at::Tensor> gathered = {at::zeros({4})};
  expect_error([&] { dist::gather(t, gathered, 0); },
               "gather to rank 0 on group 'default' (nccl), rank 0 of 1: nccl takes CUDA tensors "
               "here, got one on cpu");
  dist::destroy_process_group();
}

}  // namespace

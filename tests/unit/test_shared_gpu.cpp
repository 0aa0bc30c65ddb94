// Several ranks on one GPU over NCCL (dtrain/dist/shared_gpu.h): each rank
// becomes an NCCL host of its own, a user's own settings survive except a
// shared host id, DTRAIN_SHARE_GPU is read strictly, and init_process_group
// applies them to an NCCL rank that asks. Environment changes happen in
// forked processes, so the test program's own stays as it was.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "dtrain/dist/init.h"
#include "dtrain/dist/shared_gpu.h"
#include "dtrain/util/launch_env.h"
#include "expect_error.h"
#include "multi_process.h"

namespace {

namespace dist = dtrain::dist;
using dtrain::testing::expect_error;
using dtrain::testing::run_ranks;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string value_of(int rank, const std::string& name) {
  for (const auto& [variable, value] : dist::shared_gpu_nccl_variables(rank)) {
    if (variable == name) {
      return value;
    }
  }
  return "";
}

TEST(SharedGpu, EveryRankIsAnNcclHostOfItsOwnOverLoopback) {
  std::set<std::string> host_ids;
  for (int rank = 0; rank < 8; ++rank) {
    const std::string id = value_of(rank, "NCCL_HOSTID");
    EXPECT_NE(id.find("rank-" + std::to_string(rank)), std::string::npos) << id;
    host_ids.insert(id);
    EXPECT_EQ(value_of(rank, "NCCL_SOCKET_IFNAME"), "lo");
    EXPECT_EQ(value_of(rank, "NCCL_IB_DISABLE"), "1");
  }
  EXPECT_EQ(host_ids.size(), 8u);
}

TEST(SharedGpu, KeepsTheUsersSettingsButNeverASharedHostId) {
  const auto codes = run_ranks(1, [](int) {
    ::setenv("NCCL_SOCKET_IFNAME", "eth7", 1);
    ::setenv("NCCL_HOSTID", "the-same-for-everyone", 1);
    ::unsetenv("NCCL_IB_DISABLE");
    dist::use_shared_gpu_nccl_variables(3);
    EXPECT_EQ(env_or_empty("NCCL_SOCKET_IFNAME"), "eth7");
    EXPECT_EQ(env_or_empty("NCCL_HOSTID"), value_of(3, "NCCL_HOSTID"));
    EXPECT_EQ(env_or_empty("NCCL_IB_DISABLE"), "1");
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

TEST(SharedGpu, TheLaunchVariableIsZeroOrOne) {
  const auto codes = run_ranks(1, [](int) {
    ::unsetenv(dtrain::util::kShareGpuVariable);
    EXPECT_FALSE(dtrain::util::read_launch_env().share_gpu);
    ::setenv(dtrain::util::kShareGpuVariable, "0", 1);
    EXPECT_FALSE(dtrain::util::read_launch_env().share_gpu);
    ::setenv(dtrain::util::kShareGpuVariable, "1", 1);
    EXPECT_TRUE(dtrain::util::read_launch_env().share_gpu);
    ::setenv(dtrain::util::kShareGpuVariable, "2", 1);
    expect_error([] { dtrain::util::read_launch_env(); },
                 "environment variable DTRAIN_SHARE_GPU='2' is not 0 or 1");
    ::setenv(dtrain::util::kShareGpuVariable, "yes", 1);
    expect_error([] { dtrain::util::read_launch_env(); },
                 "environment variable DTRAIN_SHARE_GPU='yes' is not a non-negative integer");
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

// The NCCL host id init_process_group leaves in the environment of an
// NCCL rank, which asked to share the GPU or not; an error after the
// variables are set (no GPU here) does not matter to the test.
std::string host_id_after_init(bool share_gpu) {
  ::setenv(dtrain::util::kShareGpuVariable, share_gpu ? "1" : "0", 1);
  ::unsetenv("NCCL_HOSTID");
  try {
    dist::init_process_group(
        {.backend = "nccl",
         .init_method = "tcp://127.0.0.1:" + std::to_string(dtrain::testing::free_port()),
         .rank = 0,
         .world_size = 1,
         .timeout = std::chrono::seconds(20)});
    dist::destroy_process_group();
  } catch (const std::exception&) {
  }
  return env_or_empty("NCCL_HOSTID");
}

TEST(SharedGpu, InitProcessGroupAppliesThemWhenAsked) {
  const auto codes = run_ranks(1, [](int) {
    EXPECT_EQ(host_id_after_init(false), "");
    EXPECT_EQ(host_id_after_init(true), value_of(0, "NCCL_HOSTID"));
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

}  // namespace

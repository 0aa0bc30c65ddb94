// The experimental CUDA FPS kernels (kernels/experimental, none yet run on a
// GPU) against the CPU: every setting on the clouds of the default kernels'
// tests, the striped kernel on clusters of blocks, and what each refuses.
// Skips, saying why, where no CUDA device is visible.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_skip.h"
#include "dtrain/kernels/experimental/furthest_point_sample.h"
#include "dtrain/kernels/pointnet2.h"
#include "expect_error.h"
#include "fps_clouds.h"

namespace {

namespace k = dtrain::kernels;
namespace x = dtrain::kernels::experimental;
using dtrain::test::FpsCloud;

struct NamedSetting {
  std::string name;
  x::ExperimentalFps fps;
};

// Every experimental setting: the register kernel's tree and rounds, the
// leader kernel on 1024 and 512 threads and in rounds, the striped kernel in
// rounds of 1, 2 and 4, and the measured choice among the on-chip ones.
std::vector<NamedSetting> experimental_settings() {
  using V = x::FpsVariant;
  const auto tree = x::ExperimentalFps(V::kRegisters).lane(x::FpsLane::kTree);
  const auto leader = x::ExperimentalFps(V::kLeader);
  return {
      {"registers, lane tree", tree},
      {"registers, rounds of 2", x::ExperimentalFps(tree).round(2)},
      {"registers, rounds of 4", x::ExperimentalFps(tree).round(4)},
      {"leader, 1024 threads", leader},
      {"leader, 512 threads", x::ExperimentalFps(leader).threads(512)},
      {"leader, 512 threads, rounds of 2", x::ExperimentalFps(leader).threads(512).round(2)},
      {"leader, 512 threads, rounds of 4", x::ExperimentalFps(leader).threads(512).round(4)},
      {"striped, rounds of 1", x::ExperimentalFps(V::kStriped)},
      {"striped, rounds of 2", x::ExperimentalFps(V::kStriped).round(2)},
      {"striped, rounds of 4", x::ExperimentalFps(V::kStriped).round(4)},
      {"measured", x::ExperimentalFps(V::kMeasured)},
  };
}

void expect_setting_agrees(const std::vector<FpsCloud>& clouds, const NamedSetting& setting) {
  dtrain::test::expect_cpu_picks(clouds, setting.name,
                                 [&](const at::Tensor& xyz, int64_t npoint, int64_t start) {
                                   return x::furthest_point_sample(xyz, npoint, setting.fps, start);
                                 });
}

// Every setting agrees with the CPU on random clouds (2, 4 and 16 points a
// thread) and on clouds of ties, repeats, clumps, padding, NaN and infinity.
TEST(ExperimentalFpsCuda, EverySettingAgreesWithTheCpu) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(34);
  const std::vector<FpsCloud> uniform = dtrain::test::uniform_fps_clouds();
  const std::vector<FpsCloud> adversarial = dtrain::test::adversarial_fps_clouds();
  for (const NamedSetting& setting : experimental_settings()) {
    expect_setting_agrees(uniform, setting);
    expect_setting_agrees(adversarial, setting);
  }
}

// A kernel that cannot take the clouds on this GPU says so.
TEST(ExperimentalFpsCuda, ASettingRefusesCloudsItCannotHold) {
  SKIP_WITHOUT_CUDA();
  const at::Tensor big = at::rand({1, 9000, 3}).cuda();
  for (const auto& [variant, name] : {std::pair{x::FpsVariant::kRegisters, "kRegisters"},
                                      std::pair{x::FpsVariant::kLeader, "kLeader"},
                                      std::pair{x::FpsVariant::kMeasured, "kMeasured"}}) {
    dtrain::testing::expect_error<std::invalid_argument>(
        [&] { x::furthest_point_sample(big, 10, x::ExperimentalFps(variant)); },
        std::string("FpsVariant::") + name + " takes at most 8192 points");
  }
  // One block takes 8192 points; from sm_90 on, a cluster of 8 takes 65536.
  EXPECT_THROW(x::furthest_point_sample(at::rand({1, 65537, 3}).cuda(), 10,
                                        x::ExperimentalFps(x::FpsVariant::kStriped)),
               std::invalid_argument);
}

// Whether the striped kernel takes more than one block's 8192 points here
// (its limit on GPUs before sm_90, which have no clusters).
bool striped_takes_clusters() {
  try {
    x::furthest_point_sample(at::rand({1, 8193, 3}).cuda(), 2,
                             x::ExperimentalFps(x::FpsVariant::kStriped));
    return true;
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find("at most 8192 points") == std::string::npos) {
      throw;
    }
    return false;
  }
}

// The striped kernel gives the CPU's picks on every cloud, in rounds of 1, 2
// and 4 picks, on each of `clusters` blocks per cloud (0: the fewest).
void expect_striped_agrees(const std::vector<FpsCloud>& clouds, std::vector<int> clusters) {
  for (const FpsCloud& cloud : clouds) {
    for (int cluster : clusters) {
      for (int round : {1, 2, 4}) {
        const x::ExperimentalFps fps =
            x::ExperimentalFps(x::FpsVariant::kStriped).round(round).cluster(cluster);
        const at::Tensor got =
            x::furthest_point_sample(cloud.xyz.cuda(), cloud.npoint, fps, cloud.start);
        EXPECT_TRUE(at::equal(got.cpu(), cloud.expected))
            << cloud.name << " (cluster " << cluster << ", round " << round << ")";
      }
    }
  }
}

// Beyond 8192 points the striped kernel runs a cluster of 2, 4 or 8 blocks
// per cloud (sm_90 and later): clouds whose shares are uneven, clumps that
// straddle blocks, a grid of ties, the start in the last block, every round
// size.
TEST(ExperimentalFpsCuda, StripedOnAClusterAgrees) {
  SKIP_WITHOUT_CUDA();
  if (!striped_takes_clusters()) {
    GTEST_SKIP() << "thread-block clusters need sm_90";
  }
  at::manual_seed(35);
  using dtrain::test::fps_cloud;
  const std::vector<FpsCloud> clouds = {
      fps_cloud("9000 uniform (2 blocks)", at::rand({3, 9000, 3}), 2000, 8999),
      fps_cloud("20000 Gaussian (4 blocks)", at::randn({2, 20000, 3}), 3000, 4),
      fps_cloud("16^3 x 4 grid (2 blocks)", dtrain::test::grid_cloud(16384), 4096, 1),
      fps_cloud("40000 in 8 clumps (8 blocks)", dtrain::test::clumps_of(2, 40000), 2500, 39999),
      fps_cloud("65536 uniform (8 blocks)", at::rand({1, 65536, 3}), 1024, 0),
      fps_cloud("9000 sampled to the last point (2 blocks)", at::rand({1, 9000, 3}), 9000, 4500),
      fps_cloud("12000 with NaN and infinity (2 blocks)",
                at::rand({1, 12000, 3})
                    .index_put_({0, 11000, 0}, NAN)
                    .index_put_({0, 3, 2}, INFINITY)
                    .index_put_({0, 8192, 1}, NAN),
                500, 0),
  };
  expect_striped_agrees(clouds, {0});
}

// A cloud the striped kernel could hold in fewer blocks, spread over a
// cluster of 2, 4 or 8 on request, so that a small batch keeps more SMs
// busy: the goal size (32 clouds of 8192 points), a cloud sampled to its
// last point, a grid of ties, NaN, and 10 points on 8 blocks (blocks
// holding no points at all).
TEST(ExperimentalFpsCuda, StripedOnARequestedClusterAgrees) {
  SKIP_WITHOUT_CUDA();
  if (!striped_takes_clusters()) {
    GTEST_SKIP() << "thread-block clusters need sm_90";
  }
  at::manual_seed(36);
  using dtrain::test::fps_cloud;
  const std::vector<FpsCloud> clouds = {
      fps_cloud("32 x 8192 uniform", at::rand({32, 8192, 3}), 1024, 0),
      fps_cloud("3 x 1000 Gaussian, every point", at::randn({3, 1000, 3}), 1000, 999),
      fps_cloud("16^3 grid", dtrain::test::grid_cloud(4096), 2048, 5),
      fps_cloud(
          "3000 with NaN and infinity",
          at::rand({1, 3000, 3}).index_put_({0, 2000, 0}, NAN).index_put_({0, 3, 2}, INFINITY), 300,
          1),
      fps_cloud("10 points", at::rand({2, 10, 3}), 10, 9),
  };
  expect_striped_agrees(clouds, {1, 2, 4, 8});
  // 9000 points need 2 blocks.
  dtrain::testing::expect_error<std::invalid_argument>(
      [] {
        x::furthest_point_sample(at::rand({1, 9000, 3}).cuda(), 10,
                                 x::ExperimentalFps(x::FpsVariant::kStriped).cluster(1));
      },
      "hold at most 8192 points, got 9000");
}

}  // namespace

// The experimental FPS API (dtrain/kernels/experimental/furthest_point_sample.h)
// where no GPU is needed: settings that make no sense are refused by name
// before any kernel runs, the default's argument checks apply, CPU tensors
// are refused, and nothing is measured without CUDA work.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <string>

#include "dtrain/kernels/experimental/furthest_point_sample.h"
#include "expect_error.h"

namespace {

namespace x = dtrain::kernels::experimental;
using dtrain::testing::expect_error;
using V = x::FpsVariant;

void expect_refused(const x::ExperimentalFps& fps, const std::string& words) {
  // On the CPU: the setting is checked before the device.
  expect_error<c10::Error>([&] { x::furthest_point_sample(at::rand({2, 50, 3}), 10, fps); }, words);
}

TEST(FpsExperimental, SettingsThatMakeNoSenseAreNamed) {
  expect_refused(x::ExperimentalFps(V::kRegisters).round(3),
                 "the register kernel takes rounds of 1, 2 or 4 picks, got 3");
  expect_refused(x::ExperimentalFps(V::kRegisters).round(2),
                 "rounds of 2 picks need FpsLane::kTree");
  expect_refused(x::ExperimentalFps(V::kLeader).threads(256),
                 "the leader kernel runs 512 or 1024 threads a block, got 256");
  expect_refused(x::ExperimentalFps(V::kLeader).round(2),
                 "the leader kernel takes rounds of 1 pick on 1024 threads, of 1, 2 or 4 on 512; "
                 "got rounds of 2 on 1024");
  expect_refused(x::ExperimentalFps(V::kStriped).round(8),
                 "the striped kernel takes rounds of 1, 2 or 4 picks, got 8");
  expect_refused(x::ExperimentalFps(V::kStriped).cluster(3),
                 "the striped kernel runs 1, 2, 4 or 8 blocks per cloud (0: the fewest), got 3");
}

TEST(FpsExperimental, ArgumentsAreCheckedAsTheDefaultChecksThem) {
  const x::ExperimentalFps fps(V::kMeasured);
  expect_error<c10::Error>(
      [&] {
        x::furthest_point_sample(at::rand({2, 50, 2}), 10, fps);
      },
      "xyz must have shape (B, N, 3)");
  expect_error<c10::Error>(
      [&] {
        x::furthest_point_sample(at::rand({2, 50, 3}), 51, fps);
      },
      "npoint must be in [1, N] = [1, 50], got 51");
  expect_error<c10::Error>(
      [&] {
        x::furthest_point_sample(at::rand({2, 50, 3}), 5, fps, 50);
      },
      "start must be in [0, N) = [0, 50), got 50");
}

TEST(FpsExperimental, CpuTensorsAreRefusedAndNothingIsMeasured) {
  for (const V variant : {V::kRegisters, V::kLeader, V::kStriped, V::kMeasured}) {
    expect_error<c10::Error>(
        [&] {
          x::furthest_point_sample(at::rand({2, 50, 3}), 10, x::ExperimentalFps(variant));
        },
        "CUDA");
  }
  EXPECT_TRUE(x::fps_measurements().empty());
}

}  // namespace

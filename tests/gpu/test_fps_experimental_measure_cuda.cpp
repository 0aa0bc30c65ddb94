// The experimental measured FPS choice up to 8192 points
// (FpsVariant::kMeasured; Note [Choosing the CUDA FPS kernel by timing it]
// in kernels/experimental/src/cuda/furthest_point_sample_fastest.cu): one
// measurement per kind of input, every candidate in it and none whose picks
// differ, the picks the CPU's; nothing timed on a stream being captured into
// a CUDA graph, whose replay still gives the CPU's picks; other settings
// measure nothing. Each test uses kinds (B, N, npoint rounded up to powers
// of two) of its own, as the choices are kept for the process.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/kernels/experimental/furthest_point_sample.h"
#include "dtrain/kernels/pointnet2.h"

namespace {

namespace k = dtrain::kernels;
namespace x = dtrain::kernels::experimental;

#define SKIP_WITHOUT_GPU()                      \
  do {                                          \
    if (!at::hasCUDA()) {                       \
      GTEST_SKIP() << "no CUDA device visible"; \
    }                                           \
  } while (false)

// The measurements of the kind (B, N, npoint rounded up) on device 0.
std::vector<x::FpsMeasurement> measured_kind(int64_t batch, int64_t points, int64_t npoint) {
  std::vector<x::FpsMeasurement> found;
  for (const x::FpsMeasurement& kind : x::fps_measurements()) {
    if (kind.device == 0 && kind.batch == batch && kind.points == points && kind.npoint == npoint) {
      found.push_back(kind);
    }
  }
  return found;
}

at::Tensor measured(const at::Tensor& xyz, int64_t npoint) {
  return x::furthest_point_sample(xyz, npoint, x::ExperimentalFps(x::FpsVariant::kMeasured));
}

void expect_cpu_picks_of(const at::Tensor& gpu, const at::Tensor& xyz, int64_t npoint,
                         const std::string& what) {
  EXPECT_TRUE(at::equal(gpu.cpu(), k::furthest_point_sample(xyz, npoint))) << what;
}

TEST(ExperimentalFpsMeasureCuda, MeasuresEachKindOnceOverEveryCandidate) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(41);
  const at::Tensor xyz = at::rand({5, 2500, 3});
  expect_cpu_picks_of(measured(xyz.cuda(), 100), xyz, 100, "first of its kind");
  const std::vector<x::FpsMeasurement> kinds = measured_kind(8, 4096, 128);
  ASSERT_EQ(kinds.size(), 1u) << "one measurement for the kind";
  // Every candidate was timed: the register kernel's four settings and,
  // 4096 points fitting in shared memory on any GPU that runs them, the
  // leader's four; none differed from the first.
  std::vector<std::string> names;
  for (const x::FpsMeasurement::Setting& setting : kinds[0].settings) {
    names.push_back(setting.name);
    EXPECT_FALSE(setting.differs) << setting.name << "'s picks differ from the first setting's";
    EXPECT_GT(setting.seconds, 0.0) << setting.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "registers", "registers_lane_tree", "registers_round2_lane_tree",
                       "registers_round4_lane_tree", "leader_1024", "leader_512",
                       "leader_512_round2", "leader_512_round4"}));
  EXPECT_LT(kinds[0].chosen, names.size());
  // Another input of the same kind takes the choice: still one measurement.
  const at::Tensor other = at::randn({7, 3000, 3});
  expect_cpu_picks_of(measured(other.cuda(), 128), other, 128, "same kind");
  EXPECT_EQ(measured_kind(8, 4096, 128).size(), 1u);
}

TEST(ExperimentalFpsMeasureCuda, ACapturedGraphTakesTheFirstCandidateAndReplaysTheCpuPicks) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(42);
  const at::Tensor xyz = at::rand({3, 700, 3});
  const at::Tensor input = xyz.cuda();
  at::Tensor picks;
  at::cuda::CUDAGraph graph;
  {
    const c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool());
    graph.capture_begin();
    picks = measured(input, 40);
    graph.capture_end();
  }
  EXPECT_TRUE(measured_kind(4, 1024, 64).empty()) << "nothing is timed while capturing";
  picks.zero_();
  graph.replay();
  expect_cpu_picks_of(picks, xyz, 40, "the graph's replay");
  // Outside the capture the kind is measured as usual.
  expect_cpu_picks_of(measured(input, 40), xyz, 40, "after the capture");
  EXPECT_EQ(measured_kind(4, 1024, 64).size(), 1u);
}

TEST(ExperimentalFpsMeasureCuda, OtherSettingsMeasureNothing) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(43);
  const at::Tensor xyz = at::rand({9, 1500, 3});
  const auto rounds =
      x::ExperimentalFps(x::FpsVariant::kRegisters).lane(x::FpsLane::kTree).round(2);
  expect_cpu_picks_of(x::furthest_point_sample(xyz.cuda(), 200, rounds), xyz, 200, "rounds of 2");
  expect_cpu_picks_of(k::furthest_point_sample(xyz.cuda(), 200), xyz, 200, "the default");
  EXPECT_TRUE(measured_kind(16, 2048, 256).empty());
  expect_cpu_picks_of(measured(xyz.cuda(), 200), xyz, 200, "measured");
  EXPECT_EQ(measured_kind(16, 2048, 256).size(), 1u);
}

}  // namespace

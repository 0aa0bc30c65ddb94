// The CUDA FPS plan's measured choice up to 8192 points (Note [Choosing the
// CUDA FPS kernel by timing it]): one measurement per kind of input, every
// candidate in it and none whose picks differ, the picks the CPU's; nothing timed on a stream being
// captured into a CUDA graph, whose replay still gives the CPU's picks;
// DTRAIN_CUDA_FPS_MEASURE=off and forced kernels measure nothing. Each test
// uses kinds (B, N, npoint rounded up to powers of two) of its own, as the
// choices are kept for the process.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dtrain/kernels/pointnet2.h"
#include "expect_error.h"

namespace {

namespace k = dtrain::kernels;

#define SKIP_WITHOUT_GPU()                      \
  do {                                          \
    if (!at::hasCUDA()) {                       \
      GTEST_SKIP() << "no CUDA device visible"; \
    }                                           \
  } while (false)

// The measured kinds whose line starts with `kind`.
std::vector<std::string> choices_of(const std::string& kind) {
  std::vector<std::string> found;
  for (const std::string& line : k::furthest_point_sample_cuda_choices()) {
    if (line.rfind(kind, 0) == 0) {
      found.push_back(line);
    }
  }
  return found;
}

void expect_cpu_picks(const at::Tensor& gpu, const at::Tensor& xyz, int64_t npoint,
                      const std::string& what) {
  EXPECT_TRUE(at::equal(gpu.cpu(), k::furthest_point_sample(xyz, npoint))) << what;
}

TEST(FpsMeasureCuda, MeasuresEachKindOnceOverEveryCandidate) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(41);
  const at::Tensor xyz = at::rand({5, 2500, 3});
  expect_cpu_picks(k::furthest_point_sample(xyz.cuda(), 100), xyz, 100, "first of its kind");
  const std::vector<std::string> lines = choices_of("cuda:0 B<=8 N<=4096 npoint<=128: ");
  ASSERT_EQ(lines.size(), 1u) << "one line for the kind";
  // Every candidate was timed: the register kernel's four settings and,
  // 4096 points fitting in shared memory on any GPU that runs them, the
  // leader's four.
  for (const char* name : {"registers ", "registers_lane_tree ", "registers_round2_lane_tree ",
                           "registers_round4_lane_tree ", "leader_1024 ", "leader_512 ",
                           "leader_512_round2 ", "leader_512_round4 "}) {
    EXPECT_NE(lines[0].find(name), std::string::npos) << name << " in " << lines[0];
  }
  // Each candidate's picks were compared with the register kernel's on this
  // input; none may differ.
  EXPECT_EQ(lines[0].find(k::kFpsKernelDiffers), std::string::npos) << lines[0];
  // Another input of the same kind takes the choice: still one line.
  const at::Tensor other = at::randn({7, 3000, 3});
  expect_cpu_picks(k::furthest_point_sample(other.cuda(), 128), other, 128, "same kind");
  EXPECT_EQ(choices_of("cuda:0 B<=8 N<=4096 npoint<=128: ").size(), 1u);
  // Beyond 8192 points nothing is measured (the striped or chunk kernel).
  const std::size_t kinds = k::furthest_point_sample_cuda_choices().size();
  const at::Tensor big = at::rand({1, 9000, 3});
  expect_cpu_picks(k::furthest_point_sample(big.cuda(), 50), big, 50, "9000 points");
  EXPECT_EQ(k::furthest_point_sample_cuda_choices().size(), kinds);
}

TEST(FpsMeasureCuda, ACapturedGraphTakesTheFirstCandidateAndReplaysTheCpuPicks) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(42);
  const at::Tensor xyz = at::rand({3, 700, 3});
  const at::Tensor input = xyz.cuda();
  const std::string kind = "cuda:0 B<=4 N<=1024 npoint<=64: ";
  at::Tensor picks;
  at::cuda::CUDAGraph graph;
  {
    const c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool());
    graph.capture_begin();
    picks = k::furthest_point_sample(input, 40);
    graph.capture_end();
  }
  EXPECT_TRUE(choices_of(kind).empty()) << "nothing is timed while capturing";
  picks.zero_();
  graph.replay();
  expect_cpu_picks(picks, xyz, 40, "the graph's replay");
  // Outside the capture the kind is measured as usual.
  expect_cpu_picks(k::furthest_point_sample(input, 40), xyz, 40, "after the capture");
  EXPECT_EQ(choices_of(kind).size(), 1u);
}

TEST(FpsMeasureCuda, MeasuringOffOrAForcedKernelMeasuresNothing) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(43);
  const at::Tensor xyz = at::rand({9, 1500, 3});
  const std::string kind = "cuda:0 B<=16 N<=2048 npoint<=256: ";
  setenv("DTRAIN_CUDA_FPS_MEASURE", "off", 1);
  expect_cpu_picks(k::furthest_point_sample(xyz.cuda(), 200), xyz, 200, "measuring off");
  setenv("DTRAIN_CUDA_FPS_MEASURE", "maybe", 1);
  dtrain::testing::expect_error<std::exception>(
      [&] { k::furthest_point_sample(xyz.cuda(), 200); },
      "DTRAIN_CUDA_FPS_MEASURE must be on or off, got 'maybe'");
  unsetenv("DTRAIN_CUDA_FPS_MEASURE");
  setenv("DTRAIN_CUDA_FPS_ROUND", "2", 1);
  expect_cpu_picks(k::furthest_point_sample(xyz.cuda(), 200), xyz, 200, "rounds of 2 forced");
  unsetenv("DTRAIN_CUDA_FPS_ROUND");
  EXPECT_TRUE(choices_of(kind).empty());
  expect_cpu_picks(k::furthest_point_sample(xyz.cuda(), 200), xyz, 200, "measured");
  EXPECT_EQ(choices_of(kind).size(), 1u);
}

}  // namespace

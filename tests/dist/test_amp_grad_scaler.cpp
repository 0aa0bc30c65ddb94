// GradScaler's distributed mode on Gloo, 2 and 3 ranks as real processes:
// every rank computes the same gradients locally (no gradient all-reduce, as
// with local steps), one rank's gradients get an inf/NaN, and every rank
// must skip that step and keep the same scale and parameters. Without the
// group, the same run diverges (the control that shows the test can fail).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <limits>
#include <set>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/dist/init.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
namespace amp = dtrain::amp;
namespace dist = dtrain::dist;

using dtrain::testing::run_gloo_ranks;

const std::set<int> kPoisonedSteps = {2, 5, 9};

struct RunResult {
  std::vector<bool> stepped;
  at::Tensor params;  // flattened
  double scale = 0;
};

// 12 iterations of a small regression; on each poisoned step one rank
// (step % world) gets a non-finite gradient.
RunResult train(int rank, int world, const dist::ProcessGroupPtr& group) {
  at::manual_seed(0);  // the same model and data on every rank
  torch::nn::Linear model(6, 3);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().growth_interval(3).process_group(group));
  const at::Tensor x = at::randn({16, 6});
  const at::Tensor y = at::randn({16, 3});
  RunResult result;
  for (int step = 0; step < 12; ++step) {
    optimizer.zero_grad();
    const at::Tensor loss = (model(x) - y).pow(2).mean();
    scaler.scale(loss).backward();
    if (kPoisonedSteps.count(step) && rank == step % world) {
      at::NoGradGuard no_grad;
      model->weight.mutable_grad()[0][0] = step == 5 ? std::numeric_limits<float>::quiet_NaN()
                                                     : std::numeric_limits<float>::infinity();
    }
    result.stepped.push_back(scaler.step(optimizer));
    scaler.update();
  }
  result.params = at::cat({model->weight.detach().flatten(), model->bias.detach().flatten()});
  result.scale = scaler.get_scale();
  return result;
}

// Every rank's copy of `t`, gathered over the default group.
std::vector<at::Tensor> gather_all(const at::Tensor& t) {
  std::vector<at::Tensor> out(dist::get_world_size());
  for (auto& o : out) {
    o = at::empty_like(t);
  }
  dist::all_gather(out, t);
  return out;
}

class AmpWorld : public ::testing::TestWithParam<int> {};

TEST_P(AmpWorld, InfOnOneRankSkipsTheStepOnEveryRank) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    const RunResult run = train(rank, world, dist::default_group());
    for (int step = 0; step < 12; ++step) {
      EXPECT_EQ(run.stepped[step], !kPoisonedSteps.count(step))
          << "rank " << rank << " step " << step;
    }
    const auto params = gather_all(run.params);
    const auto scales = gather_all(at::full({1}, run.scale, at::kDouble));
    for (int r = 1; r < world; ++r) {
      EXPECT_TRUE(at::equal(params[r], params[0])) << "rank " << r << " parameters differ";
      EXPECT_EQ(scales[r].item<double>(), scales[0].item<double>()) << "rank " << r;
    }
    // Steps 0-1 clean, 2 inf (/2), 3-4 clean, 5 NaN (/2), 6-8 clean (x2), 9 inf (/2), 10-11 clean.
    EXPECT_EQ(run.scale, 65536.0 / 4);
  });
}

INSTANTIATE_TEST_SUITE_P(Gloo, AmpWorld, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(AmpDistributed, WithoutTheGroupRanksDiverge) {
  run_gloo_ranks(2, 30s, [](int rank, int) {
    const RunResult run = train(rank, 2, nullptr);
    // Rank 0 is poisoned on step 2, rank 1 on steps 5 and 9: each skips only its own.
    EXPECT_EQ(run.stepped[2], rank != 0);
    EXPECT_EQ(run.stepped[5], rank != 1);
    const auto params = gather_all(run.params);
    EXPECT_FALSE(at::equal(params[0], params[1]));
  });
}

}  // namespace

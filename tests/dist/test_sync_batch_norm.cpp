// SyncBatchNorm on 2 and 3 Gloo ranks against a plain BatchNorm applied to
// the concatenated global batch in one process: outputs, input gradients,
// summed weight/bias gradients and running statistics, over several
// training steps, with different (and empty) batches per rank; and a
// model converted by convert_sync_batchnorm against the unconverted one.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dtrain::ddp::SyncBatchNorm;
using dtrain::ddp::SyncBatchNormOptions;
using dtrain::testing::run_gloo_ranks;

struct Case {
  std::string name;
  std::vector<int64_t> batch_sizes;  // one per rank
  std::vector<int64_t> spatial;      // sizes after (N, C)
  bool affine = true;
  std::optional<double> momentum = 0.1;
  bool track_running_stats = true;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

constexpr int64_t kChannels = 3;
constexpr int kSteps = 3;

// torch::nn::BatchNorm1d/2d/3d for the input's rank, as one interface.
struct ReferenceBatchNorm {
  explicit ReferenceBatchNorm(const Case& c) {
    auto options = torch::nn::BatchNormOptions(kChannels)
                       .affine(c.affine)
                       .momentum(c.momentum)
                       .track_running_stats(c.track_running_stats);
    switch (c.spatial.size()) {
      case 0:
      case 1:
        module = torch::nn::BatchNorm1d(options).ptr();
        forward = [m = std::dynamic_pointer_cast<torch::nn::BatchNorm1dImpl>(module)](
                      const at::Tensor& x) { return m->forward(x); };
        break;
      case 2:
        module = torch::nn::BatchNorm2d(options).ptr();
        forward = [m = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(module)](
                      const at::Tensor& x) { return m->forward(x); };
        break;
      default:
        module = torch::nn::BatchNorm3d(options).ptr();
        forward = [m = std::dynamic_pointer_cast<torch::nn::BatchNorm3dImpl>(module)](
                      const at::Tensor& x) { return m->forward(x); };
    }
  }
  at::Tensor param(const std::string& name) { return module->named_parameters()[name]; }
  at::Tensor buffer(const std::string& name) { return module->named_buffers()[name]; }

  std::shared_ptr<torch::nn::Module> module;
  std::function<at::Tensor(const at::Tensor&)> forward;
};

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  if (want.numel() == 0) {
    return;
  }
  const double diff = (got - want).abs().max().item<double>();
  EXPECT_LT(diff, 1e-5) << what << ": max abs difference " << diff;
}

void run_case(const Case& c, int rank) {
  const int64_t total = std::accumulate(c.batch_sizes.begin(), c.batch_sizes.end(), int64_t{0});
  const int64_t offset =
      std::accumulate(c.batch_sizes.begin(), c.batch_sizes.begin() + rank, int64_t{0});
  const int64_t mine = c.batch_sizes[static_cast<std::size_t>(rank)];
  std::vector<int64_t> shape = {total, kChannels};
  shape.insert(shape.end(), c.spatial.begin(), c.spatial.end());

  // Every rank draws the same global data and parameters.
  at::manual_seed(1234);
  ReferenceBatchNorm reference(c);
  SyncBatchNorm sync(SyncBatchNormOptions(kChannels)
                         .affine(c.affine)
                         .momentum(c.momentum)
                         .track_running_stats(c.track_running_stats));
  if (c.affine) {
    at::NoGradGuard no_grad;
    const at::Tensor w = at::randn({kChannels}) + 1;
    const at::Tensor b = at::randn({kChannels});
    reference.param("weight").copy_(w);
    reference.param("bias").copy_(b);
    sync->weight.copy_(w);
    sync->bias.copy_(b);
  }

  for (int step = 0; step < kSteps; ++step) {
    const std::string where = "step " + std::to_string(step) + ", rank " + std::to_string(rank);
    // A large mean against a small spread stresses the variance formula.
    const at::Tensor global = at::randn(shape) * (step + 1) + 5 * (step - 1);
    const at::Tensor upstream = at::randn(shape);  // d loss / d output

    at::Tensor x_ref = global.clone().requires_grad_(true);
    const at::Tensor y_ref = reference.forward(x_ref);
    (y_ref * upstream).sum().backward();

    at::Tensor x = global.narrow(0, offset, mine).clone().requires_grad_(true);
    const at::Tensor y = sync(x);
    (y * upstream.narrow(0, offset, mine)).sum().backward();

    expect_close(y, y_ref.narrow(0, offset, mine), "output, " + where);
    expect_close(x.grad(), x_ref.grad().narrow(0, offset, mine), "input gradient, " + where);
    if (c.affine) {
      // Each rank holds its part; their sum is the global batch's gradient.
      for (const char* name : {"weight", "bias"}) {
        at::Tensor summed = sync->named_parameters()[name].grad().clone();
        dist::all_reduce(summed);
        expect_close(summed, reference.param(name).grad(),
                     std::string(name) + " gradient, " + where);
      }
      for (auto& p : sync->parameters()) {
        p.mutable_grad().reset();
      }
      for (auto& p : reference.module->parameters()) {
        p.mutable_grad().reset();
      }
    }
    if (c.track_running_stats) {
      expect_close(sync->running_mean, reference.buffer("running_mean"), "running_mean, " + where);
      expect_close(sync->running_var, reference.buffer("running_var"), "running_var, " + where);
      EXPECT_EQ(sync->num_batches_tracked.item<int64_t>(),
                reference.buffer("num_batches_tracked").item<int64_t>());
    }
  }

  // Eval mode: running statistics (or, without them, the local batch's).
  sync->eval();
  reference.module->eval();
  const at::Tensor global = at::randn(shape) + 2;
  if (c.track_running_stats) {
    at::NoGradGuard no_grad;
    expect_close(sync(global.narrow(0, offset, mine)),
                 reference.forward(global).narrow(0, offset, mine),
                 "eval output, rank " + std::to_string(rank));
  }
}

class SyncBatchNormGloo : public ::testing::TestWithParam<Case> {};

TEST_P(SyncBatchNormGloo, EqualsBatchNormOnTheGlobalBatch) {
  const Case c = GetParam();
  const int world = static_cast<int>(c.batch_sizes.size());
  run_gloo_ranks(world, 30s, [&](int rank, int) { run_case(c, rank); });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SyncBatchNormGloo,
    ::testing::Values(
        // 2 ranks, images, different batch sizes.
        Case{.name = "TwoRanksImages", .batch_sizes = {3, 5}, .spatial = {4, 2}},
        // 3 ranks, (N, C) features, one rank with a single sample, cumulative average.
        Case{.name = "ThreeRanksFeaturesCumulativeAverage",
             .batch_sizes = {4, 1, 6},
             .spatial = {},
             .momentum = std::nullopt},
        // 3 ranks, volumes, an empty rank, no affine parameters.
        Case{.name = "ThreeRanksVolumesEmptyRankNoAffine",
             .batch_sizes = {2, 0, 3},
             .spatial = {2, 3, 2},
             .affine = false},
        // 2 ranks, sequences, no running statistics.
        Case{.name = "TwoRanksSequencesNoRunningStats",
             .batch_sizes = {2, 3},
             .spatial = {5},
             .track_running_stats = false}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A converted model on 2 ranks equals the unconverted one on the global
// batch: the Sequential's forward really goes through SyncBatchNorm.
TEST(ConvertSyncBatchNormGloo, ConvertedModelEqualsTheModelOnTheGlobalBatch) {
  constexpr int kWorld = 2;
  const std::vector<int64_t> batch_sizes = {2, 4};
  run_gloo_ranks(kWorld, 30s, [&](int rank, int) {
    at::manual_seed(77);
    torch::nn::Sequential reference(torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3)),
                                    torch::nn::BatchNorm2d(4), torch::nn::ReLU(),
                                    torch::nn::Flatten(), torch::nn::Linear(4 * 2 * 2, 3));
    auto model = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(reference->clone());
    ASSERT_EQ(dtrain::ddp::convert_sync_batchnorm(model), 1);

    const at::Tensor global = at::randn({6, 2, 4, 4}) * 2 + 1;
    const at::Tensor upstream = at::randn({6, 3});
    const int64_t offset = rank == 0 ? 0 : batch_sizes[0];
    const int64_t mine = batch_sizes[static_cast<std::size_t>(rank)];
    const at::Tensor y_ref = reference->forward(global);
    (y_ref * upstream).sum().backward();
    const at::Tensor y = model->forward(global.narrow(0, offset, mine));
    (y * upstream.narrow(0, offset, mine)).sum().backward();

    expect_close(y, y_ref.narrow(0, offset, mine), "output, rank " + std::to_string(rank));
    const auto got = model->named_parameters();
    const auto want = reference->named_parameters();
    for (const auto& item : want) {
      at::Tensor summed = got[item.key()].grad().clone();
      dist::all_reduce(summed);
      expect_close(summed, item.value().grad(), item.key() + " gradient");
    }
    for (const auto& item : reference->named_buffers()) {
      if (item.value().is_floating_point()) {
        expect_close(model->named_buffers()[item.key()], item.value(), item.key());
      }
    }
  });
}

// Different channel counts per rank: the statistics' all_reduce would
// have different sizes, which Gloo answers by aborting the process. Every
// rank raises a dtrain::Error naming the counts instead.
TEST(SyncBatchNormGlooErrors, DifferentChannelCountsRaiseOnEveryRank) {
  run_gloo_ranks(2, 30s, [](int rank, int) {
    const int64_t channels = rank == 0 ? 4 : 8;
    SyncBatchNorm sync{SyncBatchNormOptions(channels)};
    const at::Tensor x = at::randn({3, channels, 2});
    std::string message;
    try {
      sync(x);
    } catch (const dtrain::Error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("rank 0 has 4, rank 1 has 8"), std::string::npos) << message;
    EXPECT_NE(message.find("this is rank " + std::to_string(rank)), std::string::npos) << message;
    // The group is still usable: both ranks left the check together.
    at::Tensor one = at::ones({1});
    dist::all_reduce(one);
    EXPECT_EQ(one.item<float>(), 2);
  });
}

}  // namespace

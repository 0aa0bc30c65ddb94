// broadcast_optimizer_state and DistributedOptimizer on 2 Gloo ranks whose
// optimizers or parameters differ: every rank raises the same dtrain::Error
// naming the difference (never LibTorch's internal assert on one rank, nor
// a Gloo abort); a fresh root's empty state replaces a stepped rank's; and
// DistributedOptimizer skips frozen parameters, as Horovod does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "dtrain/ddp/broadcast.h"
#include "dtrain/ddp/distributed_optimizer.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "gloo_ranks.h"

namespace {

namespace ddp = dtrain::ddp;
namespace dist = dtrain::dist;
using dtrain::testing::error_of;
using dtrain::testing::run_gloo_ranks;
using dtrain::testing::same_on_all_ranks;

// The same value on every rank, as a one-element tensor.
bool same_on_all_ranks(std::int64_t value) {
  return same_on_all_ranks(at::full({1}, value, at::kLong));
}

// One Adam step on `layer`; without `bias_too` the bias gets no gradient.
void adam_step(torch::optim::Adam& optimizer, torch::nn::Linear& layer, bool bias_too) {
  optimizer.zero_grad();
  layer->forward(at::randn({2, 4})).sum().backward();
  if (!bias_too) {
    layer->bias.mutable_grad().reset();  // Adam makes no state without a gradient
  }
  optimizer.step();
}

// Every rank holds root's Adam state: the same entries, moments and steps.
void expect_adam_state_equal_everywhere(torch::optim::Adam& optimizer, torch::nn::Linear& layer) {
  auto& state = optimizer.state();
  EXPECT_TRUE(same_on_all_ranks(static_cast<std::int64_t>(state.size())))
      << "this rank has " << state.size() << " state entries";
  for (const at::Tensor& p : layer->parameters()) {
    const auto it = state.find(p.unsafeGetTensorImpl());
    const bool has = it != state.end();
    ASSERT_TRUE(same_on_all_ranks(static_cast<std::int64_t>(has)));
    if (has) {
      auto& s = static_cast<torch::optim::AdamParamState&>(*it->second);
      EXPECT_TRUE(same_on_all_ranks(s.step()));
      EXPECT_TRUE(same_on_all_ranks(s.exp_avg()));
      EXPECT_TRUE(same_on_all_ranks(s.exp_avg_sq()));
    }
  }
}

TEST(BroadcastOptimizerState, FreshRootClearsASteppedRanksState) {
  run_gloo_ranks(2, [](int rank, int) {
    at::manual_seed(3 + rank);
    torch::nn::Linear layer(4, 3);
    torch::optim::Adam optimizer(layer->parameters(), torch::optim::AdamOptions(1e-2));
    if (rank == 1) {
      adam_step(optimizer, layer, /*bias_too=*/true);
      ASSERT_EQ(optimizer.state().size(), 2u);
    }
    ddp::broadcast_optimizer_state(optimizer, /*root=*/0);
    EXPECT_EQ(optimizer.state().size(), 0u) << "rank " << rank;
  });
}

TEST(BroadcastOptimizerState, EntriesRootLacksAreDropped) {
  run_gloo_ranks(2, [](int rank, int) {
    at::manual_seed(5 + rank);
    torch::nn::Linear layer(4, 3);
    torch::optim::Adam optimizer(layer->parameters(), torch::optim::AdamOptions(1e-2));
    // Root (rank 1) has state for the weight only; rank 0 for both, twice stepped.
    for (int step = 0; step < 2 - rank; ++step) {
      adam_step(optimizer, layer, /*bias_too=*/rank == 0);
    }
    ddp::broadcast_optimizer_state(optimizer, /*root=*/1);
    EXPECT_EQ(optimizer.state().size(), 1u) << "rank " << rank;
    expect_adam_state_equal_everywhere(optimizer, layer);
  });
}

TEST(BroadcastOptimizerState, DifferentOptimizerTypesRaiseOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3);
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    if (rank == 0) {
      optimizer =
          std::make_unique<torch::optim::SGD>(layer->parameters(), torch::optim::SGDOptions(0.1));
    } else {
      auto adam = std::make_unique<torch::optim::Adam>(layer->parameters());
      adam_step(*adam, layer, /*bias_too=*/true);
      optimizer = std::move(adam);
    }
    const std::string message =
        error_of([&] { ddp::broadcast_optimizer_state(*optimizer, /*root=*/0); });
    EXPECT_NE(message.find("root rank 0 has torch::optim::SGD, rank 1 has torch::optim::Adam"),
              std::string::npos)
        << message;
  });
}

TEST(BroadcastOptimizerState, DifferentParameterCountsRaiseOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3);
    std::vector<at::Tensor> parameters = layer->parameters();
    if (rank == 1) {
      parameters.push_back(at::zeros({2}).requires_grad_(true));
    }
    torch::optim::Adam optimizer(parameters);
    const std::string message =
        error_of([&] { ddp::broadcast_optimizer_state(optimizer, /*root=*/0); });
    EXPECT_NE(message.find("param_groups[0]"), std::string::npos) << message;
    EXPECT_NE(message.find("root rank 0 has 2, rank 1 has 3"), std::string::npos) << message;
  });
}

TEST(BroadcastOptimizerState, DifferentParameterGroupCountsRaiseOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (rank == 0) {
      groups.emplace_back(layer->parameters());
    } else {
      groups.emplace_back(std::vector<at::Tensor>{layer->weight});
      groups.emplace_back(std::vector<at::Tensor>{layer->bias});
    }
    torch::optim::Adam optimizer(groups);
    const std::string message =
        error_of([&] { ddp::broadcast_optimizer_state(optimizer, /*root=*/0); });
    EXPECT_NE(message.find("number of parameter groups"), std::string::npos) << message;
    EXPECT_NE(message.find("root rank 0 has 1, rank 1 has 2"), std::string::npos) << message;
  });
}

TEST(BroadcastOptimizerState, DifferentShapesRaiseOnEveryRankNamingTheRoot) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3 + rank);
    torch::optim::Adam optimizer(layer->parameters());
    const std::string message =
        error_of([&] { ddp::broadcast_optimizer_state(optimizer, /*root=*/1); });
    EXPECT_NE(message.find("broadcast_optimizer_state"), std::string::npos) << message;
    EXPECT_NE(message.find("'param_groups[0].params[0]'"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1 has Float [4, 4], rank 0 has Float [3, 4]"), std::string::npos)
        << message;
  });
}

TEST(DistributedOptimizerAgreement, DifferentShapesRaiseOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3 + rank);
    auto sgd =
        std::make_shared<torch::optim::SGD>(layer->parameters(), torch::optim::SGDOptions(0.1));
    const std::string message = error_of([&] { ddp::DistributedOptimizer optimizer(sgd); });
    EXPECT_NE(message.find("DistributedOptimizer"), std::string::npos) << message;
    EXPECT_NE(message.find("'param_groups[0].params[0]'"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0 has Float [3, 4] (requires grad), rank 1 has Float [4, 4]"),
              std::string::npos)
        << message;
  });
}

TEST(DistributedOptimizerAgreement, DifferentParameterCountsRaiseOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3);
    std::vector<at::Tensor> parameters = layer->parameters();
    if (rank == 1) {
      parameters.push_back(at::zeros({2}).requires_grad_(true));
    }
    auto sgd = std::make_shared<torch::optim::SGD>(parameters, torch::optim::SGDOptions(0.1));
    const std::string message = error_of([&] { ddp::DistributedOptimizer optimizer(sgd); });
    EXPECT_NE(message.find("at parameter 2: rank 0 has nothing, rank 1 has Float [2] (requires "
                           "grad)"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("rank 0 has 2 parameters, rank 1 has 3"), std::string::npos) << message;
  });
}

TEST(DistributedOptimizerAgreement, FrozenOnOneRankOnlyRaisesOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3);
    if (rank == 1) {
      layer->bias.set_requires_grad(false);
    }
    auto sgd =
        std::make_shared<torch::optim::SGD>(layer->parameters(), torch::optim::SGDOptions(0.1));
    const std::string message = error_of([&] { ddp::DistributedOptimizer optimizer(sgd); });
    EXPECT_NE(message.find("'param_groups[0].params[1]'"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1 has Float [3] (frozen, requires_grad false)"), std::string::npos)
        << message;
  });
}

TEST(DistributedOptimizerAgreement, FrozenParametersAreSkipped) {
  run_gloo_ranks(2, [](int rank, int) {
    at::manual_seed(11);  // the same initial weights on both ranks
    torch::nn::Linear first(4, 5);
    torch::nn::Linear second(5, 2);
    first->weight.set_requires_grad(false);
    first->bias.set_requires_grad(false);
    std::vector<at::Tensor> parameters = first->parameters();
    for (const auto& p : second->parameters()) {
      parameters.push_back(p);
    }
    const at::Tensor frozen = first->weight.detach().clone();
    auto sgd = std::make_shared<torch::optim::SGD>(parameters, torch::optim::SGDOptions(0.1));
    ddp::DistributedOptimizer optimizer(sgd);
    EXPECT_EQ(optimizer.reducer().parameters().size(), 2u);
    at::manual_seed(100 + rank);  // different data per rank
    optimizer.zero_grad();
    second->forward(first->forward(at::randn({3, 4}))).sum().backward();
    optimizer.step();
    EXPECT_TRUE(at::equal(first->weight, frozen));
    // Averaged gradients: the trained layer stays the same on both ranks.
    EXPECT_TRUE(same_on_all_ranks(second->weight.detach()));
    EXPECT_TRUE(same_on_all_ranks(second->bias.detach()));
  });
}

}  // namespace

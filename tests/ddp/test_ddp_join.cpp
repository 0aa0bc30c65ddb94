// DDP's join: ranks whose data runs out shadow the collectives of those
// still training, so uneven inputs give the global batch's result and every
// rank ends in step; what join cannot take is refused by name.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "ddp_test_helpers.h"
#include "ddp_test_models.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/ddp/sync_batch_norm.h"
#include "gloo_ranks.h"
#include "test_support.h"

namespace {

namespace ddp = dtrain::ddp;
namespace F = torch::nn::functional;
using dtrain::testing::error_of;
using dtrain::testing::flat_parameters;
using dtrain::testing::ManySizes;
using dtrain::testing::max_abs_difference;
using dtrain::testing::run_gloo_ranks;
using dtrain::testing::same_on_all_ranks;

// Ranks that ran out of data cannot follow accumulation steps.
TEST(DdpJoin, NoSyncInsideJoinIsRefused) {
  run_gloo_ranks(2, [](int, int) {
    ddp::DistributedDataParallel<ManySizes> model{ManySizes()};
    const std::string message = error_of([&] {
      model.join([&] {
        auto guard = model.no_sync();
        model(at::randn({2, 16})).sum().backward();
      });
    });
    EXPECT_NE(message.find("no_sync() inside join() is not supported"), std::string::npos)
        << message;
  });
}

// Batch norm's running statistics while rank 0 has run out of data come
// from a rank still training: rank 1 ends with the statistics of all its
// batches, as a BatchNorm fed them alone has, not rank 0's stale ones.
TEST(DdpJoin, BuffersComeFromARankStillTraining) {
  run_gloo_ranks(2, [](int rank, int) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(21);
    std::vector<at::Tensor> batches;  // rank 1's three; rank 0 has the first
    for (int step = 0; step < 3; ++step) {
      batches.push_back(at::randn({4, 6}, generator) * (step + 1) + step);
    }
    torch::nn::BatchNorm1d alone(6);
    for (const at::Tensor& batch : batches) {
      (void)alone(batch);
    }
    torch::nn::Sequential net(torch::nn::BatchNorm1d(6), torch::nn::Linear(6, 2));
    ddp::DistributedDataParallel<torch::nn::Sequential> model(net);
    model.join([&] {
      for (int step = 0; step < (rank == 0 ? 1 : 3); ++step) {
        model(batches[static_cast<std::size_t>(step)]).sum().backward();
      }
    });
    const auto buffers = model->named_buffers();
    EXPECT_TRUE(at::allclose(buffers["0.running_mean"], alone->running_mean)) << "rank " << rank;
    EXPECT_TRUE(at::allclose(buffers["0.running_var"], alone->running_var)) << "rank " << rank;
  });
}

// A SyncBatchNorm's collectives cannot be answered by a rank that joined.
TEST(DdpJoin, SyncBatchNormIsRefused) {
  run_gloo_ranks(2, [](int, int) {
    torch::nn::Sequential net(torch::nn::Linear(6, 4), ddp::SyncBatchNorm(4));
    ddp::DistributedDataParallel<torch::nn::Sequential> model(net);
    const std::string message = error_of([&] { model.join([] {}); });
    EXPECT_NE(message.find("join: the module holds a SyncBatchNorm ('1')"), std::string::npos)
        << message;
  });
}

// Ranks with different numbers of batches: rank r has 2 + r. Every step
// the ranks still training average over the samples they hold, so the
// result equals one process training on whatever data exists at each step.
TEST(DdpJoin, UnevenInputsMatchTheGlobalBatchAndEndInSync) {
  for (int world : {2, 3}) {
    run_gloo_ranks(world, [](int rank, int world) {
      const std::int64_t rows = 3;
      const int most_steps = 2 + world - 1;
      auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
      std::vector<std::vector<at::Tensor>> xs(world), ys(world);
      for (int r = 0; r < world; ++r) {
        for (int step = 0; step < 2 + r; ++step) {
          xs[r].push_back(at::randn({rows, 16}, generator));
          ys[r].push_back(at::randint(10, {rows}, generator));
        }
      }
      at::manual_seed(3);
      ManySizes reference;
      torch::optim::SGD reference_optimizer(reference->parameters(), 0.1);
      for (int step = 0; step < most_steps; ++step) {
        std::vector<at::Tensor> x, y;
        for (int r = 0; r < world; ++r) {
          if (step < 2 + r) {
            x.push_back(xs[r][step]);
            y.push_back(ys[r][step]);
          }
        }
        reference_optimizer.zero_grad();
        F::cross_entropy(reference->forward(at::cat(x)), at::cat(y)).backward();
        reference_optimizer.step();
      }

      at::manual_seed(3);
      ddp::DdpOptions options;
      options.averaging = ddp::GradientAveraging::kSampleCount;
      ddp::DistributedDataParallel<ManySizes> model(ManySizes(), options);
      torch::optim::SGD optimizer(model->parameters(), 0.1);
      model.join([&] {
        for (int step = 0; step < 2 + rank; ++step) {
          optimizer.zero_grad();
          F::cross_entropy(model(xs[rank][step]), ys[rank][step]).backward();
          optimizer.step();
        }
      });
      EXPECT_LT(max_abs_difference(reference->parameters(), model->parameters()), 1e-5)
          << "rank " << rank << " of " << world;
      EXPECT_TRUE(same_on_all_ranks(flat_parameters(model->parameters())));
    });
  }
}

}  // namespace

// DDP behaviour beyond equivalence: errors that name what is wrong,
// gradients as bucket views, the bucket rebuild, the timeline's overlap,
// and the Horovod-style broadcasts (join: test_ddp_join.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "ddp_test_helpers.h"
#include "ddp_test_models.h"
#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/ddp/broadcast.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/util/errors.h"
#include "gloo_ranks.h"
#include "test_support.h"

namespace {

namespace ddp = dtrain::ddp;
namespace dist = dtrain::dist;
using dtrain::testing::error_of;
using dtrain::testing::flat_parameters;
using dtrain::testing::ManySizes;
using dtrain::testing::max_abs_difference;
using dtrain::testing::run_gloo_ranks;
using dtrain::testing::same_on_all_ranks;

TEST(DdpErrors, ParameterShapeMismatchNamesTheParameter) {
  run_gloo_ranks(2, [](int rank, int) {
    torch::nn::Linear layer(4, 3 + rank);  // rank 1 built a different model
    const std::string message =
        error_of([&] { ddp::DistributedDataParallel<torch::nn::Linear> model(layer); });
    EXPECT_NE(message.find("'weight'"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1 has Float [4, 4]"), std::string::npos) << message;
  });
}

TEST(DdpErrors, MissingGradientNamesParameterAndRank) {
  run_gloo_ranks(2, [](int rank, int) {
    ddp::DistributedDataParallel<ManySizes> model(ManySizes(/*with_unused_layers=*/true));
    const at::Tensor x = at::randn({4, 16});
    const std::string message =
        error_of([&] { model(x).sum().backward(); });  // 'skip' and 'never' get nothing
    EXPECT_NE(message.find("rank " + std::to_string(rank)), std::string::npos) << message;
    EXPECT_NE(message.find("'never.weight'"), std::string::npos) << message;
    EXPECT_NE(message.find("'skip.bias'"), std::string::npos) << message;
    EXPECT_NE(message.find("find_unused_parameters"), std::string::npos) << message;
  });
}

// One rank froze a parameter alone: its buckets would differ and the
// all-reduces would not match (Gloo aborts the process). Named on every rank.
TEST(DdpErrors, FreezingAParameterOnOneRankIsNamedOnEveryRank) {
  run_gloo_ranks(2, [](int rank, int) {
    ManySizes module;
    if (rank == 1) {
      module->parameters()[0].requires_grad_(false);
    }
    const std::string name = module->named_parameters()[0].key();
    const std::string message =
        error_of([&] { ddp::DistributedDataParallel<ManySizes> model(module); });
    EXPECT_NE(message.find("('" + name + "'): rank 0 has"), std::string::npos) << message;
    EXPECT_NE(message.find("(frozen, requires_grad false)"), std::string::npos) << message;
  });
}

TEST(DdpErrors, AModuleWithNothingToTrainIsNamed) {
  run_gloo_ranks(2, [](int, int) {
    ManySizes module;
    for (auto& parameter : module->parameters()) {
      parameter.requires_grad_(false);
    }
    const std::string message =
        error_of([&] { ddp::DistributedDataParallel<ManySizes> model(module); });
    EXPECT_NE(message.find("DistributedDataParallel: the module has no parameter that requires "
                           "grad (it has none, or all are frozen)"),
              std::string::npos)
        << message;
  });
}

// A layer whose output the loss uses without it passing through forward's
// output (here: a parameter used outside forward) would keep a local,
// unaveraged gradient; it is named, and the wrapper refuses to go on.
struct OutsideUseImpl : torch::nn::Module {
  OutsideUseImpl() {
    layer = register_module("layer", torch::nn::Linear(4, 2));
    extra = register_parameter("extra", at::ones({2}));
  }
  at::Tensor forward(const at::Tensor& x) { return layer(x); }
  torch::nn::Linear layer{nullptr};
  at::Tensor extra;
};
TORCH_MODULE(OutsideUse);

TEST(DdpErrors, AGradientAfterTheUnusedSearchIsNamed) {
  run_gloo_ranks(2, [](int rank, int) {
    ddp::DdpOptions options;
    options.find_unused_parameters = true;
    OutsideUse module;
    ddp::DistributedDataParallel<OutsideUse> model(module, options);
    const at::Tensor x = at::randn({3, 4});
    const std::string message =
        error_of([&] { (model(x).sum() + (module->extra * (rank + 1)).sum()).backward(); });
    EXPECT_NE(message.find("parameter 'extra' got a gradient after DistributedDataParallel "
                           "found it unused"),
              std::string::npos)
        << message;
    // That backward never finished: the next forward says so.
    const std::string next = error_of([&] { model(x); });
    EXPECT_NE(next.find("rank " + std::to_string(rank) + ": the previous backward did not finish"),
              std::string::npos)
        << next;
  });
}

// y through unchanged, whose backward runs a reentrant backward that gives
// `weight` a gradient of its own, apart from the main graph's.
struct ReentrantUse : torch::autograd::Function<ReentrantUse> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& y,
                            const at::Tensor& weight) {
    ctx->saved_data["weight"] = weight;
    return y.clone();
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const at::Tensor weight = ctx->saved_data["weight"].toTensor();
    {
      at::AutoGradMode enabled(true);
      (weight * 2).sum().backward();
    }
    return {grads[0], at::Tensor()};
  }
};

struct ReentrantModelImpl : torch::nn::Module {
  ReentrantModelImpl() {
    linear = register_module("linear", torch::nn::Linear(4, 4));
    scale = register_parameter("scale", at::ones({4}));
  }
  // The scale's gradient comes first in backward, then the reentrant one
  // for linear.weight, then the main graph's for it.
  at::Tensor forward(const at::Tensor& x) {
    return ReentrantUse::apply(linear(x), linear->weight) * scale;
  }
  torch::nn::Linear linear{nullptr};
  at::Tensor scale;
};
TORCH_MODULE(ReentrantModel);

// Its bucket may be reduced with the first gradient only: raised, naming
// the parameter, rather than one of the two lost.
TEST(DdpErrors, ASecondGradientInOneBackwardIsNamed) {
  run_gloo_ranks(2, [](int, int) {
    ddp::DistributedDataParallel<ReentrantModel> model{ReentrantModel()};
    const std::string message = error_of([&] { model(at::randn({3, 4})).sum().backward(); });
    EXPECT_NE(message.find("parameter 'linear.weight' received a second gradient in one "
                           "backward pass"),
              std::string::npos)
        << message;
  });
}

// Output tensors inside nested containers reach the unused search, so a
// layer used only through them is not taken for unused.
struct NestedOutputImpl : torch::nn::Module {
  NestedOutputImpl() {
    a = register_module("a", torch::nn::Linear(4, 4));
    b = register_module("b", torch::nn::Linear(4, 2));
  }
  std::tuple<at::Tensor, std::vector<at::Tensor>> forward(const at::Tensor& x) {
    const at::Tensor hidden = a(x);
    return {hidden, {b(hidden)}};
  }
  torch::nn::Linear a{nullptr};
  torch::nn::Linear b{nullptr};
};
TORCH_MODULE(NestedOutput);

TEST(DdpForward, NestedOutputsReachTheUnusedSearch) {
  run_gloo_ranks(2, [](int rank, int) {
    ddp::DdpOptions options;
    options.find_unused_parameters = true;
    NestedOutput module;
    ddp::DistributedDataParallel<NestedOutput> model(module, options);
    at::manual_seed(11 + rank);  // different data per rank
    for (int step = 0; step < 2; ++step) {
      const auto [hidden, heads] = model(at::randn({3, 4}));
      heads[0].square().sum().backward();
      ASSERT_TRUE(module->b->weight.grad().defined());
      EXPECT_TRUE(same_on_all_ranks(module->b->weight.grad())) << "step " << step;
      EXPECT_TRUE(same_on_all_ranks(module->a->weight.grad())) << "step " << step;
      module->zero_grad();
    }
  });
}

// One Linear registered under two names is one tensor: one slot, one
// reduction, and with bucket views .grad stays the averaged gradient.
struct SharedLayerImpl : torch::nn::Module {
  SharedLayerImpl() {
    first = register_module("first", torch::nn::Linear(4, 4));
    second = register_module("second", first);
  }
  at::Tensor forward(const at::Tensor& x) { return second(torch::tanh(first(x))); }
  torch::nn::Linear first{nullptr};
  torch::nn::Linear second{nullptr};
};
TORCH_MODULE(SharedLayer);

TEST(DdpBuckets, ASharedParameterIsReducedOnce) {
  for (const bool views : {false, true}) {
    run_gloo_ranks(2, [views](int rank, int) {
      auto generator = at::make_generator<at::CPUGeneratorImpl>(5);
      std::vector<at::Tensor> xs;
      for (int step = 0; step < 3; ++step) {
        xs.push_back(at::randn({4, 4}, generator));  // rows 0-1 rank 0's, 2-3 rank 1's
      }
      at::manual_seed(2);
      SharedLayer reference;
      torch::optim::SGD reference_optimizer(reference->parameters(), 0.1);
      at::manual_seed(2);
      ddp::DdpOptions options;
      options.gradient_as_bucket_view = views;
      ddp::DistributedDataParallel<SharedLayer> model(SharedLayer(), options);
      torch::optim::SGD optimizer(model->parameters(), 0.1);
      for (int step = 0; step < 3; ++step) {  // the buckets are rebuilt after step 0
        reference_optimizer.zero_grad();
        reference->forward(xs[step]).square().mean().backward();
        reference_optimizer.step();
        optimizer.zero_grad();
        model(xs[step].narrow(0, 2 * rank, 2)).square().mean().backward();
        optimizer.step();
        EXPECT_LT(max_abs_difference(reference->parameters(), model->parameters()), 1e-6)
            << "step " << step << (views ? " with bucket views" : "");
      }
    });
  }
}

TEST(DdpErrors, BadOptionsAreRejected) {
  run_gloo_ranks(1, [](int, int) {
    EXPECT_NE(error_of([] {
                ddp::DistributedDataParallel<ManySizes> model(ManySizes(), {.bucket_cap_mb = -1});
              }).find("bucket_cap_mb"),
              std::string::npos);
  });
}

TEST(DdpBuckets, GradientsAreViewsIntoBuckets) {
  run_gloo_ranks(2, [](int, int) {
    ddp::DdpOptions options;
    options.gradient_as_bucket_view = true;
    options.first_bucket_mb = 0.002;
    options.bucket_cap_mb = 0.004;
    ddp::DistributedDataParallel<ManySizes> model(ManySizes(), options);
    torch::optim::SGD optimizer(model->parameters(), 0.1);
    for (int step = 0; step < 3; ++step) {
      optimizer.zero_grad();  // sets .grad to undefined; the hooks re-point them
      model(at::randn({4, 16})).sum().backward();
      optimizer.step();
    }
    const auto parameters = model->parameters();
    for (const auto& bucket : model.reducer().buckets()) {
      // Members of one bucket are consecutive slices of one buffer.
      const at::Tensor& first = parameters[bucket.parameters.front()].grad();
      std::int64_t expected_offset = first.storage_offset();
      for (std::size_t index : bucket.parameters) {
        const at::Tensor& grad = parameters[index].grad();
        ASSERT_TRUE(grad.defined());
        EXPECT_TRUE(grad.is_alias_of(first));
        EXPECT_EQ(grad.storage_offset(), expected_offset);
        expected_offset += grad.numel();
      }
    }
    // zero_grad without set_to_none must work on views (detach_ on a view fails).
    optimizer.zero_grad(/*set_to_none=*/false);
    EXPECT_EQ(parameters[0].grad().abs().sum().item<double>(), 0.0);
  });
}

TEST(DdpBuckets, AModelSmallerThanTheFirstBucketStillGetsTwo) {
  run_gloo_ranks(1, [](int, int) {
    // ManySizes has 51 KB of gradients, far below the 1 MiB first-bucket cap.
    ddp::DistributedDataParallel<ManySizes> model{ManySizes()};
    const auto buckets = model.reducer().buckets();
    ASSERT_EQ(buckets.size(), 2u);
    EXPECT_GE(buckets[0].bytes, buckets[1].bytes / 4) << "the split is not degenerate";
  });
}

TEST(DdpBuckets, RebuiltOnceInGradientReadyOrderAndAgreedByAllRanks) {
  run_gloo_ranks(3, [](int, int) {
    ddp::DdpOptions options;
    options.first_bucket_mb = 0.002;
    options.bucket_cap_mb = 0.004;
    ddp::DistributedDataParallel<ManySizes> model(ManySizes(), options);
    EXPECT_FALSE(model.reducer().buckets_rebuilt());
    for (int step = 0; step < 3; ++step) {
      model(at::randn({4, 16})).sum().backward();
    }
    EXPECT_TRUE(model.reducer().buckets_rebuilt());
    std::vector<std::int64_t> layout;
    for (const auto& bucket : model.reducer().buckets()) {
      layout.push_back(-1);
      for (auto p : bucket.parameters) {
        layout.push_back(static_cast<std::int64_t>(p));
      }
    }
    EXPECT_GE(model.reducer().buckets().size(), 3u);
    EXPECT_TRUE(same_on_all_ranks(at::tensor(layout, at::kLong)));
    EXPECT_EQ(model.reducer().iterations(), 3);
  });
}

// A model whose backward takes tens of milliseconds, one bucket per layer.
torch::nn::Sequential deep_model() {
  torch::nn::Sequential model;
  for (int i = 0; i < 6; ++i) {
    model->push_back(torch::nn::Linear(384, 384));
  }
  return model;
}

TEST(DdpTimeline, BucketAllReducesStartBeforeBackwardEnds) {
  const dtrain::testing::TempDir trace;
  run_gloo_ranks(2, [&](int rank, int) {
    ddp::DdpOptions options;
    options.record_timeline = true;
    options.first_bucket_mb = 0.5;
    options.bucket_cap_mb = 0.5;  // each 384x384 layer (0.56 MiB) closes a bucket
    ddp::DistributedDataParallel<torch::nn::Sequential> model(deep_model(), options);
    // When the first layer's weight gradient, the last one backward makes,
    // is computed in each step.
    std::vector<ddp::TimePoint> last_gradient;
    model->parameters()[0].register_hook(
        [&](const at::Tensor&) { last_gradient.push_back(std::chrono::steady_clock::now()); });
    const at::Tensor x = at::randn({256, 384});
    for (int step = 0; step < 4; ++step) {
      model(x).square().mean().backward();
    }
    const auto steps = model.timeline().steps();
    ASSERT_EQ(steps.size(), 4u);
    ASSERT_EQ(last_gradient.size(), 4u);
    for (const auto& step : steps) {
      ASSERT_GE(step.buckets.size(), 5u);
      // The last layers' bucket is launched before backward reaches the
      // first layer: the overlap is real (buckets launched only once every
      // gradient is there would start after it).
      EXPECT_LT(step.buckets.front().start, last_gradient[static_cast<std::size_t>(step.step)])
          << "step " << step.step;
      EXPECT_LT(step.backward_start, step.buckets.front().start);
      for (const auto& bucket : step.buckets) {
        EXPECT_LE(bucket.start, bucket.end);
      }
    }
    EXPECT_GT(model.timeline().hidden_fraction(), 0.0);
    const std::string path = trace.file("rank" + std::to_string(rank) + ".json");
    model.timeline().write_chrome_trace(path);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("\"name\":\"bucket 0\""), std::string::npos);
    EXPECT_NE(text.str().find("\"name\":\"backward step 3\""), std::string::npos);
    EXPECT_NE(model.timeline().summary().find("communication hidden behind backward"),
              std::string::npos);
  });
}

TEST(DdpBroadcast, OptimizerStateFollowsRoot) {
  run_gloo_ranks(3, [](int rank, int) {
    at::manual_seed(20 + rank);
    ManySizes model;
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
    for (int step = 0; step < 1 + rank; ++step) {  // different moments and step counts
      optimizer.zero_grad();
      model->forward(at::randn({4, 16})).sum().backward();
      optimizer.step();
    }
    ddp::broadcast_parameters(*model, /*root=*/2);
    ddp::broadcast_optimizer_state(optimizer, /*root=*/2);
    EXPECT_TRUE(same_on_all_ranks(flat_parameters(model->parameters())));
    // Identical gradients from here on: identical updates only if the
    // moments and step counts were copied too.
    at::manual_seed(99);
    optimizer.zero_grad();
    model->forward(at::randn({4, 16})).sum().backward();
    optimizer.step();
    EXPECT_TRUE(same_on_all_ranks(flat_parameters(model->parameters())));
  });
}

TEST(DdpForward, EvalForwardRunsNoCollectives) {
  run_gloo_ranks(2, [](int rank, int) {
    ddp::DistributedDataParallel<ManySizes> model{ManySizes()};
    if (rank == 0) {  // only rank 0 evaluates; rank 1 would hang on any collective
      at::NoGradGuard no_grad;
      model->eval();
      (void)model(at::randn({2, 16}));
      model->train();
    }
    model(at::randn({2, 16})).sum().backward();
    EXPECT_TRUE(same_on_all_ranks(model->parameters()[0].grad()));
  });
}

// Grad mode decides, not train/eval mode, as in PyTorch: a model trained
// in eval mode (batch norm and dropout frozen) still averages its
// gradients. A gradient on one rank alone (a saliency map) goes through
// the wrapped module's own forward and stays local.
TEST(DdpForward, EvalModeBackwardIsAveragedAndTheModulesOwnForwardStaysLocal) {
  run_gloo_ranks(2, [](int rank, int) {
    ddp::DistributedDataParallel<ManySizes> model{ManySizes()};
    model->eval();
    at::manual_seed(rank);  // each rank its own batch
    const at::Tensor x = at::randn({2, 16});
    model->forward(x).sum().backward();  // would wait for rank 1 if it all-reduced
    const at::Tensor local = model->parameters()[0].grad().clone();
    EXPECT_FALSE(same_on_all_ranks(local)) << "the ranks' batches should differ";
    model->zero_grad();
    model(x).sum().backward();
    const at::Tensor averaged = model->parameters()[0].grad();
    EXPECT_TRUE(same_on_all_ranks(averaged)) << "an eval-mode backward was not averaged";
    at::Tensor mean_of_local = local.clone();
    dist::all_reduce(mean_of_local, dist::ReduceOp::kAvg);
    EXPECT_TRUE(at::allclose(mean_of_local, averaged));
  });
}

// Mixed precision under DDP: bf16 autocast forward, a GradScaler on the
// all-reduced (scaled) gradients. An overflow on one rank reaches every
// rank through the all-reduce, so all skip the same step and stay equal.
TEST(DdpWithAmp, ScaledGradientsSkipTogetherAndReplicasStayEqual) {
  run_gloo_ranks(2, [](int rank, int) {
    ddp::DistributedDataParallel<ManySizes> model{ManySizes()};
    torch::optim::SGD optimizer(model->parameters(), 0.05);
    dtrain::amp::GradScaler scaler(dtrain::amp::GradScalerOptions().init_scale(1024.0));
    std::vector<bool> stepped;
    for (int step = 0; step < 4; ++step) {
      optimizer.zero_grad();
      at::Tensor x = at::randn({4, 16});
      if (step == 2 && rank == 1) {
        x[0][0] = std::numeric_limits<float>::infinity();  // only rank 1 overflows
      }
      at::Tensor loss;
      {
        dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCPU));
        loss = model(x).to(at::kFloat).square().mean();
      }
      scaler.scale(loss).backward();
      stepped.push_back(scaler.step(optimizer));
      scaler.update();
    }
    EXPECT_EQ(stepped, (std::vector<bool>{true, true, false, true})) << "rank " << rank;
    EXPECT_EQ(scaler.get_scale(), 512.0) << "one backoff from 1024";
    EXPECT_TRUE(same_on_all_ranks(flat_parameters(model->parameters())));
  });
}

TEST(DdpForward, ConstructionBroadcastsRankZerosWeights) {
  run_gloo_ranks(3, [](int rank, int) {
    at::manual_seed(rank);
    ManySizes replica;
    ddp::DistributedDataParallel<ManySizes> model(replica);
    EXPECT_TRUE(same_on_all_ranks(flat_parameters(model->parameters())));
    at::manual_seed(0);
    ManySizes rank_zero;
    EXPECT_EQ(max_abs_difference(rank_zero->parameters(), model->parameters()), 0.0);
  });
}

}  // namespace

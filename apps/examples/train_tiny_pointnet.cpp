// Research code on dtrain's Trainer, set from options alone (no command
// line): a tiny PointNet of its own (a shared MLP over each point, a max
// over the points, a linear head) learns the synthetic shapes, alone or
// data-parallel, on today's recipe: AdamW without weight decay on biases,
// a cosine schedule after a linear warmup, label smoothing, clipping. The
// report goes to the one argument, if given:
//
//   dtrun --standalone --nproc-per-node 2 build/apps/examples/train_tiny_pointnet out/tiny.csv
#include <cstdio>
#include <exception>
#include <string>

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "dtrain/datasets/point_cloud_augment.h"
#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/train/optimizers.h"
#include "dtrain/train/trainer.h"

namespace F = torch::nn::functional;
namespace nn = torch::nn;
using namespace dtrain::train;

// Clouds (B, N, 3) -> class logits (B, classes).
struct TinyPointNetImpl : nn::Module {
  explicit TinyPointNetImpl(int64_t classes)
      : mlp(register_module(
            "mlp", nn::Sequential(nn::Linear(3, 64), nn::ReLU(), nn::Linear(64, 128), nn::ReLU()))),
        head(register_module("head", nn::Linear(128, classes))) {}
  at::Tensor forward(const at::Tensor& points) {
    return head(std::get<0>(mlp->forward(points).max(1)));
  }
  nn::Sequential mlp;
  nn::Linear head;
};
TORCH_MODULE(TinyPointNet);
using Net = JobModel<TinyPointNet>;

int train(const std::string& report) {
  const auto options = TrainerOptions()
                           .epochs(6)
                           .batch_size(16)
                           .lr(5e-3)
                           .lr_schedule(LrSchedule::cosine(6))
                           .warmup_steps(10)
                           .optimizer(OptimizerOptions()
                                          .kind(OptimizerKind::kAdamW)
                                          .weight_decay(0.01)
                                          .decay_norms_and_biases(false))
                           .clip_grad_norm(1.0)
                           .noun("clouds")
                           .csv(report);
  Trainer trainer(options);
  const auto shapes =
      dtrain::datasets::SyntheticShapesOptions().num_classes(4).points_per_cloud(256);
  const auto train = generate_synthetic_shapes(dtrain::datasets::Split::kTrain, shapes);
  const auto test = generate_synthetic_shapes(dtrain::datasets::Split::kTest, shapes);
  torch::manual_seed(options.seed());
  TinyPointNet model(shapes.num_classes());
  model->to(trainer.device());
  const auto adamw = make_optimizer(*model, options.lr(), options.optimizer());
  const TensorDataset clouds({train.points, train.labels}, [](auto points, auto& generator) {
    return augment_point_clouds(points, dtrain::datasets::PointCloudAugmentOptions(), generator);
  });
  auto step = [](Net& net, const Batch& batch) {
    return F::cross_entropy(net.train(batch[0]), batch[1],
                            F::CrossEntropyFuncOptions().label_smoothing(0.1));
  };
  auto evaluate = [&test](Net& net, const EvalContext& context) {
    double loss = 0, right = 0;
    context.for_each_batch(test.size(), [&](int64_t begin, int64_t count) {
      const auto logits = net.eval(test.points.narrow(0, begin, count).to(context.device()));
      const auto labels = test.labels.narrow(0, begin, count).to(context.device());
      loss += F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                  .item<double>();
      right += logits.argmax(1).eq(labels).sum().item<double>();
    });
    const auto totals = context.job().sum({loss, right});
    return EvalStats{.mean_loss = totals[0] / test.size(), .accuracy = totals[1] / test.size()};
  };
  return trainer.fit(model, *adamw, clouds, step, evaluate);
}

int main(int argc, char** argv) {
  set_up_training_process();
  try {
    return train(argc > 1 ? argv[1] : "out/tiny_pointnet.csv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_tiny_pointnet: error: %s\n", e.what());
    return 1;
  }
}

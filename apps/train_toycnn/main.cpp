// train_toycnn: the seed tutorial's toy CNN on Fashion-MNIST (the default)
// or CIFAR-10 (--dataset cifar10, the seed's own data), in one process or
// data-parallel over several.
//
// Launched with a world size above 1 (dtrun, torchrun-style variables,
// mpirun or srun) it joins the process group, wraps the model in
// DistributedDataParallel and shards every epoch with DistributedSampler
// (PyTorch's semantics: seed + epoch shuffle, padded to a multiple of the
// world size; --rank-weights splits it unequally, for mixed hardware);
// --batch-size is per process, as in PyTorch DDP. Each epoch:
// mini-batch SGD with a progress bar, then test loss and accuracy over the
// whole test set (each rank evaluates a slice), logged and appended to the
// CSV report by rank 0, and a checkpoint when --checkpoint names one
// (--resume continues from it). --augment adds the standard CIFAR
// augmentation (random crop with 4 pixels of black padding, horizontal
// flip).
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/optim/sgd.h>

#include "classification_loop.h"
#include "dtrain/data/image_augment.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "image_data.h"
#include "train_options.h"
#include "training_job.h"
#include "training_run.h"

namespace {

using namespace dtrain::apps;
using dtrain::models::ToyCnn;

// Training-image augmentation drawing from each batch's own generator
// (batch_generator): ranks draw differently, and a rerun with the same
// seed draws the same. The padding is -1, black after normalisation, as
// torchvision pads the raw image with 0 before ToTensor and Normalize (and
// the colour of Fashion-MNIST's background and border).
Augment make_augment(const TrainOptions& options) {
  if (!options.augment) {
    return {};
  }
  const auto augment = dtrain::data::ImageAugmentOptions().pad(4).fill(-1.0).flip_probability(0.5);
  return [augment](const at::Tensor& images, at::Generator& generator) {
    return dtrain::data::augment_images(images, augment, generator);
  };
}

// SGD with momentum at the (scaled) rate of --lr, the same every epoch.
TrainingOptimizer sgd_training_optimizer(const TrainOptions& options,
                                         const std::vector<at::Tensor>& parameters) {
  return {.optimizer = std::make_unique<torch::optim::SGD>(
              parameters, torch::optim::SGDOptions(options.lr).momentum(options.momentum)),
          .lr_at = [options](int world, int /*epoch*/) { return options.scaled_lr(world); },
          .summary =
              [options](int world) {
                return fmt::format("SGD with momentum {} at learning rate {} ({})",
                                   options.momentum, options.scaled_lr(world),
                                   options.lr_scaling_words());
              }};
}

int train(const TrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  const dtrain::util::LaunchEnv env = dtrain::apps::launch_env(options.join);
  // First: a missing GPU is named before any data is read.
  const c10::Device device = choose_device(env, options.device);
  const ImageData data = load_image_data(options);
  torch::manual_seed(options.seed);
  ToyCnn model(dtrain::models::ToyCnnOptions()
                   .in_channels(data.channels)
                   .num_classes(static_cast<int64_t>(data.class_names.size())));
  model->to(device);
  TrainingTask<ToyCnn> task{
      .model = model,
      .model_name = "toy CNN",
      .data_summary =
          fmt::format("{} from {}: {} training, {} test images{}", data.name, data.root,
                      data.train.size(), data.test.size(),
                      options.augment ? " (training images randomly cropped and flipped)" : ""),
      .noun = "images",
      .train_size = data.train.size(),
      .train_labels = {data.train.labels},
      .needs_two_per_process = false,  // no batch norm
      .eval_batch = 1000,
      .extra_columns = {},
      .shared_settings = dtrain::apps::shared_settings(options),
      .optimizer = sgd_training_optimizer(options, model->parameters()),
      .train_batches =
          [&](JobModel<ToyCnn>& job_model) {
            return classification_batches(job_model.train_forward(), data.train,
                                          make_augment(options));
          },
      .evaluate =
          [&](JobModel<ToyCnn>& job_model, const LoopSettings& settings, const Job& job) {
            return evaluate(job_model.eval_forward(), *model, data.test, settings, job);
          }};
  return run_training(options, env, device, std::move(task));
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::apps::set_up_training_process();
  CLI::App app{
      "Train the seed tutorial's toy CNN on Fashion-MNIST or CIFAR-10 (CPU or GPU; data-parallel "
      "when launched with several processes by dtrun, mpirun or srun)",
      "train_toycnn"};
  TrainOptions options;
  dtrain::apps::add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

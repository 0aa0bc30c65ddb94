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
// CSV report by rank 0. --augment adds the standard CIFAR augmentation
// (random crop with 4 pixels of black padding, horizontal flip).
#include <chrono>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/optim/sgd.h>

#include "classification_loop.h"
#include "dtrain/data/image_augment.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "epoch_report.h"
#include "image_data.h"
#include "job_model.h"
#include "sharding.h"
#include "train_options.h"
#include "training_job.h"

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

int train(const TrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  const dtrain::util::LaunchEnv env = dtrain::util::read_launch_env();
  // First: a missing GPU is named before any data is read.
  const c10::Device device = choose_device(env, options.device);
  EpochReport report(options.csv, /*writes=*/env.rank.value_or(0) == 0, options.epochs);
  const ImageData data = load_image_data(options);
  const LabeledTensors& train = data.train;
  const LabeledTensors& test = data.test;
  const Job job = start_job(env, options.backend, options.dist_timeout_s, device);
  spdlog::info("{} from {}: {} training, {} test images{}; {} process(es) on {}, {} thread(s) each",
               data.name, data.root, train.size(), test.size(),
               options.augment ? " (training images randomly cropped and flipped)" : "", job.world,
               device.str(), at::get_num_threads());

  torch::manual_seed(options.seed);
  ToyCnn model(dtrain::models::ToyCnnOptions()
                   .in_channels(data.channels)
                   .num_classes(static_cast<int64_t>(data.class_names.size())));
  model->to(device);
  Sharding sharding(options, train.size(), job, "samples");
  JobModel<ToyCnn> job_model(model, job, /*sample_count=*/sharding.weighted());
  const double lr = options.scaled_lr(job.world);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(lr).momentum(options.momentum));
  spdlog::info("precision: {}; {}, learning rate {} ({})", precision_name(options),
               sharding.summary(), lr, options.lr_scaling_words());

  const auto scaler = make_loss_scaler(options);
  const LoopSettings settings = loop_settings(options, job, /*eval_batch=*/1000, scaler.get());
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const EpochStats stats =
        train_epoch(*model, optimizer, sharding, settings, epoch, job,
                    classification_batches(job_model.train_forward(), train, make_augment(options)),
                    job_model.join());
    const CommStats comm = job_model.take_comm_stats();
    eval = evaluate(job_model.eval_forward(), *model, test, settings, job);
    report.record(epoch, stats, eval, comm);
    if (epoch < options.epochs) {  // (auto: the next epoch's split)
      sharding.measure(stats, comm, job);
    }
  }
  report.finish(eval,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count(),
                job.world);
  finish_job(job);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train the seed tutorial's toy CNN on Fashion-MNIST or CIFAR-10 (CPU or GPU; data-parallel "
      "when launched with several processes by dtrun, mpirun or srun)",
      "train_toycnn"};
  TrainOptions options;
  dtrain::apps::add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

// train_toycnn: the seed tutorial's toy CNN on Fashion-MNIST, in one
// process or data-parallel over several.
//
// Launched with a world size above 1 (dtrun, torchrun-style variables,
// mpirun or srun) it joins the process group, wraps the model in
// DistributedDataParallel and shards every epoch with DistributedSampler
// (PyTorch's semantics: seed + epoch shuffle, padded to a multiple of the
// world size); --batch-size is per process, as in PyTorch DDP. Each epoch:
// mini-batch SGD with a progress bar, then test loss and accuracy over the
// whole test set (each rank evaluates a slice), logged and appended to the
// CSV report by rank 0.
#include <chrono>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/optim/sgd.h>

#include "classification_loop.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "epoch_report.h"
#include "job_model.h"
#include "train_options.h"
#include "training_job.h"

namespace {

using namespace dtrain::apps;
using dtrain::models::ToyCnn;

LabeledTensors load_split(dtrain::datasets::Split split, const TrainOptions& options,
                          int64_t limit) {
  auto images = dtrain::datasets::load_fashion_mnist(
      split, dtrain::datasets::FashionMnistOptions().root(options.data_dir));
  return LabeledTensors{images.images, images.labels}.first(limit);
}

int train(const TrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  const dtrain::util::LaunchEnv env = dtrain::util::read_launch_env();
  EpochReport report(options.csv, /*writes=*/env.rank.value_or(0) == 0, options.epochs);
  const LabeledTensors train =
      load_split(dtrain::datasets::Split::kTrain, options, options.train_limit);
  const LabeledTensors test =
      load_split(dtrain::datasets::Split::kTest, options, options.test_limit);
  const Job job = start_job(env, options.backend, options.dist_timeout_s);
  spdlog::info(
      "Fashion-MNIST from {}: {} training, {} test images; {} process(es), {} thread(s) each",
      options.data_dir, train.size(), test.size(), job.world, at::get_num_threads());

  torch::manual_seed(options.seed);
  ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  JobModel<ToyCnn> job_model(model, job);
  const double lr = options.scaled_lr(job.world);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(lr).momentum(options.momentum));
  dtrain::data::DistributedSampler sampler(
      train.size(), dtrain::data::DistributedSamplerOptions(job.world, job.rank)
                        .seed(static_cast<int64_t>(options.seed)));
  spdlog::info(
      "precision: {}; {} samples per process per epoch, batch {} per process, learning rate {} "
      "({} scaling)",
      options.amp == "bf16" ? "bf16 autocast (CPU)" : "fp32", sampler.num_samples(),
      options.batch_size, lr, options.lr_scaling);

  const LoopSettings settings{
      .epochs = options.epochs, .batch_size = options.batch_size, .bf16 = options.amp == "bf16"};
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const EpochStats stats = train_epoch(job_model.train_forward(), *model, optimizer, train,
                                         sampler, settings, epoch, job);
    const CommStats comm = job_model.take_comm_stats();
    eval = evaluate(job_model.eval_forward(), *model, test, settings, job);
    report.record(epoch, stats, eval, comm);
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
      "Train the seed tutorial's toy CNN on Fashion-MNIST (CPU; data-parallel when "
      "launched with several processes by dtrun, mpirun or srun)",
      "train_toycnn"};
  TrainOptions options;
  dtrain::apps::add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

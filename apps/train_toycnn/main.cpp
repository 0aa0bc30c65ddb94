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
#include <optional>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/dist/init.h"
#include "dtrain/kernels/metrics.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/train/progress_bar.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/memory.h"
#include "train_options.h"

namespace {

using dtrain::amp::AutocastGuard;
using dtrain::amp::AutocastOptions;
using dtrain::apps::TrainOptions;
using dtrain::datasets::LabeledImages;
using dtrain::models::ToyCnn;
namespace F = torch::nn::functional;

LabeledImages first_n(LabeledImages data, int64_t limit) {
  if (limit > 0 && limit < data.size()) {
    data.images = data.images.narrow(0, 0, limit);
    data.labels = data.labels.narrow(0, 0, limit);
  }
  return data;
}

// This process's place in the job; world 1 when started alone.
struct Job {
  int rank = 0;
  int world = 1;
  bool distributed() const { return world > 1; }

  // Sums `values` over every rank (a no-op alone).
  std::vector<double> sum(std::vector<double> values) const {
    if (distributed()) {
      at::Tensor t = at::tensor(values, at::kDouble);
      dtrain::dist::all_reduce(t);
      values.assign(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
    }
    return values;
  }
};

Job start_job(const TrainOptions& options, const dtrain::util::LaunchEnv& env) {
  if (env.world_size.value_or(1) <= 1) {
    dtrain::util::retain_freed_host_memory();  // init_process_group's default, alone
    return {};
  }
  dtrain::dist::init_process_group(
      {.backend = options.backend, .timeout = std::chrono::seconds(options.dist_timeout_s)});
  return {dtrain::dist::get_rank(), dtrain::dist::get_world_size()};
}

struct EpochStats {
  double mean_loss = 0;
  int64_t samples = 0;  // over every rank
  double seconds = 0;
};

using Forward = std::function<at::Tensor(const at::Tensor&)>;

EpochStats train_epoch(const Forward& forward, ToyCnn& model, torch::optim::SGD& optimizer,
                       const LabeledImages& train, dtrain::data::DistributedSampler& sampler,
                       const TrainOptions& options, int epoch, const Job& job) {
  model->train();
  const auto start = std::chrono::steady_clock::now();
  sampler.set_epoch(epoch - 1);
  const at::Tensor order = at::tensor(sampler.indices(), at::kLong);
  const int64_t n = order.numel();
  const int64_t batches = (n + options.batch_size - 1) / options.batch_size;
  dtrain::train::ProgressBar bar(fmt::format("epoch {}/{}", epoch, options.epochs), batches,
                                 /*enabled=*/job.rank == 0);
  double loss_sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t begin = b * options.batch_size;
    const at::Tensor index = order.narrow(0, begin, std::min(options.batch_size, n - begin));
    const at::Tensor images = train.images.index_select(0, index);
    const at::Tensor labels = train.labels.index_select(0, index);
    optimizer.zero_grad();
    at::Tensor loss;
    {
      AutocastGuard autocast(AutocastOptions(at::kCPU).enabled(options.amp == "bf16"));
      loss = F::cross_entropy(forward(images), labels);
    }
    loss.backward();
    optimizer.step();
    const double batch_loss = loss.item<double>();
    loss_sum += batch_loss * static_cast<double>(index.size(0));
    bar.advance(1, fmt::format("loss {:.4f}", batch_loss));
  }
  bar.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto totals = job.sum({loss_sum, static_cast<double>(n)});
  return {totals[0] / totals[1], static_cast<int64_t>(totals[1]), seconds};
}

struct EvalStats {
  double mean_loss = 0;
  double accuracy = 0;
};

// Rank r evaluates the r-th of `world` contiguous slices of the test set;
// the sums are combined, so every rank gets the whole set's numbers.
EvalStats evaluate(ToyCnn& model, const LabeledImages& test, const TrainOptions& options,
                   const Job& job) {
  model->eval();
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(AutocastOptions(at::kCPU).enabled(options.amp == "bf16"));
  constexpr int64_t kEvalBatch = 1000;
  const int64_t first = test.size() * job.rank / job.world;
  const int64_t last = test.size() * (job.rank + 1) / job.world;
  double loss_sum = 0;
  double correct = 0;
  for (int64_t begin = first; begin < last; begin += kEvalBatch) {
    const int64_t count = std::min(kEvalBatch, last - begin);
    const at::Tensor logits = model(test.images.narrow(0, begin, count));
    const at::Tensor labels = test.labels.narrow(0, begin, count);
    loss_sum +=
        F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    correct += static_cast<double>(dtrain::kernels::count_correct(logits, labels).item<int64_t>());
  }
  const auto totals = job.sum({loss_sum, correct});
  const auto n = static_cast<double>(test.size());
  return {totals[0] / n, totals[1] / n};
}

int train(const TrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  // The report is opened first, by the rank that writes it: a bad path
  // fails before any work is done.
  const dtrain::util::LaunchEnv env = dtrain::util::read_launch_env();
  const bool writes_report = env.rank.value_or(0) == 0;
  std::optional<dtrain::train::CsvWriter> csv;
  if (writes_report) {
    csv.emplace(options.csv, std::vector<std::string>{"epoch", "samples", "epoch_time_s",
                                                      "samples_per_s", "peak_rss_mb", "train_loss",
                                                      "test_loss", "test_accuracy"});
  }
  const auto dataset_options = dtrain::datasets::FashionMnistOptions().root(options.data_dir);
  const LabeledImages train = first_n(
      dtrain::datasets::load_fashion_mnist(dtrain::datasets::Split::kTrain, dataset_options),
      options.train_limit);
  const LabeledImages test =
      first_n(dtrain::datasets::load_fashion_mnist(dtrain::datasets::Split::kTest, dataset_options),
              options.test_limit);
  const Job job = start_job(options, env);
  spdlog::info(
      "Fashion-MNIST from {}: {} training, {} test images; {} process(es), {} threads each",
      options.data_dir, train.size(), test.size(), job.world, at::get_num_threads());

  torch::manual_seed(options.seed);
  ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  // Alone, the model itself; in a job, DDP around it (rank 0's weights win).
  std::optional<dtrain::ddp::DistributedDataParallel<ToyCnn>> ddp;
  if (job.distributed()) {
    ddp.emplace(model);
  }
  const Forward forward = [&](const at::Tensor& x) { return ddp ? (*ddp)(x) : model(x); };
  const double lr = options.lr_scaling == "linear" ? options.lr * job.world : options.lr;
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

  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const EpochStats stats =
        train_epoch(forward, model, optimizer, train, sampler, options, epoch, job);
    eval = evaluate(model, test, options, job);
    const double samples_per_s = static_cast<double>(stats.samples) / stats.seconds;
    const double peak_rss_mb = static_cast<double>(dtrain::util::peak_rss_bytes()) / (1 << 20);
    if (csv) {
      spdlog::info(
          "epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%, {:.0f} "
          "samples/s, {:.1f}s, peak RSS {:.0f} MiB",
          epoch, options.epochs, stats.mean_loss, eval.mean_loss, 100 * eval.accuracy,
          samples_per_s, stats.seconds, peak_rss_mb);
      csv->write_row({int64_t{epoch}, stats.samples, stats.seconds, samples_per_s, peak_rss_mb,
                      stats.mean_loss, eval.mean_loss, eval.accuracy});
    }
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count();
  if (csv) {
    spdlog::info(
        "done: test accuracy {:.2f}% after {} epochs in {:.1f}s on {} process(es); "
        "report in {}",
        100 * eval.accuracy, options.epochs, total, job.world, options.csv);
  }
  if (job.distributed()) {
    dtrain::dist::destroy_process_group();
  }
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

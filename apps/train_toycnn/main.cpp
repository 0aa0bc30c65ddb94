// train_toycnn: the seed tutorial's toy CNN on Fashion-MNIST, one process.
//
// Each epoch: shuffled mini-batch SGD over the training set with a progress
// bar, then test loss and accuracy, logged and appended to the CSV report.
#include <chrono>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/kernels/metrics.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/train/progress_bar.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/memory.h"
#include "train_options.h"

namespace {

using dtrain::amp::AutocastGuard;
using dtrain::amp::AutocastOptions;
using dtrain::apps::TrainOptions;
using dtrain::datasets::LabeledImages;
namespace F = torch::nn::functional;

LabeledImages first_n(LabeledImages data, int64_t limit) {
  if (limit > 0 && limit < data.size()) {
    data.images = data.images.narrow(0, 0, limit);
    data.labels = data.labels.narrow(0, 0, limit);
  }
  return data;
}

struct EpochStats {
  double mean_loss = 0;
  int64_t samples = 0;
  double seconds = 0;
};

EpochStats train_epoch(dtrain::models::ToyCnn& model, torch::optim::SGD& optimizer,
                       const LabeledImages& train, const TrainOptions& options, int epoch,
                       at::Generator& generator) {
  model->train();
  const auto start = std::chrono::steady_clock::now();
  const int64_t n = train.size();
  const int64_t batches = (n + options.batch_size - 1) / options.batch_size;
  const at::Tensor order = at::randperm(n, generator, at::TensorOptions().dtype(at::kLong));
  dtrain::train::ProgressBar bar(fmt::format("epoch {}/{}", epoch, options.epochs), batches);
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
      loss = F::cross_entropy(model(images), labels);
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
  return {loss_sum / static_cast<double>(n), n, seconds};
}

struct EvalStats {
  double mean_loss = 0;
  double accuracy = 0;
};

EvalStats evaluate(dtrain::models::ToyCnn& model, const LabeledImages& test) {
  model->eval();
  torch::NoGradGuard no_grad;
  constexpr int64_t kEvalBatch = 1000;
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < test.size(); begin += kEvalBatch) {
    const int64_t count = std::min(kEvalBatch, test.size() - begin);
    const at::Tensor logits = model(test.images.narrow(0, begin, count));
    const at::Tensor labels = test.labels.narrow(0, begin, count);
    loss_sum +=
        F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    correct += dtrain::kernels::count_correct(logits, labels).item<int64_t>();
  }
  const auto n = static_cast<double>(test.size());
  return {loss_sum / n, static_cast<double>(correct) / n};
}

int train(const TrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  torch::manual_seed(options.seed);
  at::Generator shuffle_generator = at::detail::createCPUGenerator(options.seed);

  // The report is opened first: a bad path fails before any work is done.
  dtrain::train::CsvWriter csv(options.csv,
                               {"epoch", "samples", "epoch_time_s", "samples_per_s", "peak_rss_mb",
                                "train_loss", "test_loss", "test_accuracy"});
  const auto dataset_options = dtrain::datasets::FashionMnistOptions().root(options.data_dir);
  const LabeledImages train = first_n(
      dtrain::datasets::load_fashion_mnist(dtrain::datasets::Split::kTrain, dataset_options),
      options.train_limit);
  const LabeledImages test =
      first_n(dtrain::datasets::load_fashion_mnist(dtrain::datasets::Split::kTest, dataset_options),
              options.test_limit);
  spdlog::info("Fashion-MNIST from {}: {} training, {} test images; {} threads", options.data_dir,
               train.size(), test.size(), at::get_num_threads());

  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(options.lr).momentum(options.momentum));
  spdlog::info("precision: {}", options.amp == "bf16" ? "bf16 autocast (CPU)" : "fp32");
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const EpochStats stats =
        train_epoch(model, optimizer, train, options, epoch, shuffle_generator);
    {
      AutocastGuard autocast(AutocastOptions(at::kCPU).enabled(options.amp == "bf16"));
      eval = evaluate(model, test);
    }
    const double samples_per_s = static_cast<double>(stats.samples) / stats.seconds;
    const double peak_rss_mb = static_cast<double>(dtrain::util::peak_rss_bytes()) / (1 << 20);
    spdlog::info(
        "epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%, {:.0f} "
        "samples/s, "
        "{:.1f}s, peak RSS {:.0f} MiB",
        epoch, options.epochs, stats.mean_loss, eval.mean_loss, 100 * eval.accuracy, samples_per_s,
        stats.seconds, peak_rss_mb);
    csv.write_row({int64_t{epoch}, stats.samples, stats.seconds, samples_per_s, peak_rss_mb,
                   stats.mean_loss, eval.mean_loss, eval.accuracy});
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count();
  spdlog::info("done: test accuracy {:.2f}% after {} epochs in {:.1f}s; report in {}",
               100 * eval.accuracy, options.epochs, total, options.csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train the seed tutorial's toy CNN on Fashion-MNIST (one process, CPU)",
               "train_toycnn"};
  TrainOptions options;
  dtrain::apps::add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

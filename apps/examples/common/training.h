// What the seed's two training examples (horovod_train, amp_ddp_train)
// share: their data flags, the training images, walking one rank's
// sampler indices in mini-batches, and the closing check that every rank
// holds the same weights.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>

#include "common/format.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/cli_checks.h"

namespace dtrain::examples {

struct TrainFlags {
  std::string data_dir = datasets::fashion_mnist_default_root();
  int64_t train_limit = 4096;
  int epochs = 1;
  int64_t batch_size = 64;
};

// --data-dir, --train-limit, --epochs, --batch-size.
inline void add_train_flags(CLI::App& app, TrainFlags& flags) {
  app.add_option(
         "--data-dir", flags.data_dir,
         "Fashion-MNIST directory (the default comes from $DTRAIN_FASHION_MNIST_DIR when set)")
      ->capture_default_str();
  app.add_option("--train-limit", flags.train_limit, "Training images used")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--epochs", flags.epochs)->check(dtrain::util::positive())->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "Samples per step and rank")
      ->check(dtrain::util::positive())
      ->capture_default_str();
}

// The first train_limit training images.
inline datasets::LabeledImages load_training_images(const TrainFlags& flags) {
  datasets::LabeledImages train = datasets::load_fashion_mnist(
      datasets::Split::kTrain, datasets::FashionMnistOptions().root(flags.data_dir));
  const int64_t n = std::min(flags.train_limit, train.size());
  train.images = train.images.narrow(0, 0, n);
  train.labels = train.labels.narrow(0, 0, n);
  return train;
}

// Calls fn(batch_number, index) for consecutive slices of `indices` of at
// most batch_size (index: int64 tensor of dataset rows).
template <typename Fn>
void for_each_batch(const std::vector<int64_t>& indices, int64_t batch_size, Fn fn) {
  const at::Tensor order = at::tensor(indices, at::kLong);
  for (int64_t begin = 0, batch = 0; begin < order.numel(); begin += batch_size, ++batch) {
    fn(batch, order.narrow(0, begin, std::min(batch_size, order.numel() - begin)));
  }
}

// Prints "Rank R parameters agree across ranks" when every rank's
// `parameters` sum to the same float64 value (the min and max all-reduced
// over the default group), "... DIFFER ..." otherwise. Every rank must call it.
inline void print_parameter_agreement(int rank, const std::vector<at::Tensor>& parameters) {
  at::Tensor checksum = at::zeros({1}, at::kDouble);
  for (const auto& p : parameters) {
    checksum += p.detach().to(at::kDouble).sum();
  }
  at::Tensor low = checksum.clone();
  dist::all_reduce(low, dist::ReduceOp::kMin);
  dist::all_reduce(checksum, dist::ReduceOp::kMax);
  print_line("Rank " + std::to_string(rank) + " parameters " +
             (at::equal(low, checksum) ? "agree" : "DIFFER") + " across ranks");
}

}  // namespace dtrain::examples

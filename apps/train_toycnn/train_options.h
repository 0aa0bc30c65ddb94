// Flags of train_toycnn and their checks.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "train_flags.h"

namespace dtrain::apps {

struct TrainOptions : CommonTrainOptions {
  // "fashion-mnist": Debian's Fashion-MNIST IDX files, padded to 32x32, one
  // channel; "cifar10": CIFAR-10's binary version, three channels.
  std::string dataset = "fashion-mnist";
  std::string data_dir;  // empty: the dataset's default directory
  double momentum = 0.9;
  // Random crop (4 pixels of black padding) and horizontal flip of every
  // training image, the standard CIFAR recipe.
  bool augment = false;

  TrainOptions() { csv = "out/train_toycnn.csv"; }
};

// Registers every flag on `app`, with ranges checked by CLI11 at parse time.
// The common shared settings and --dataset, --momentum, --augment
// (check_same_settings); --data-dir may differ.
std::vector<dist::Setting> shared_settings(const TrainOptions& options);

void add_train_flags(CLI::App& app, TrainOptions& options);

}  // namespace dtrain::apps

// Flags of train_toycnn and their checks.
#pragma once

#include <string>

#include "data_limits.h"
#include "dtrain/train/flag_table.h"
#include "dtrain/train/trainer_options.h"
#include "dtrain/util/enum_words.h"

namespace dtrain::apps {

// --dataset: Debian's Fashion-MNIST IDX files, padded to 32x32, one
// channel; or CIFAR-10's binary version, three channels.
enum class ImageSet { kFashionMnist, kCifar10 };

struct TrainOptions {
  train::TrainerOptions trainer =
      train::TrainerOptions()
          .csv("out/train_toycnn.csv")
          .noun("images")
          .model_name("toy CNN")
          .eval_batch(1000)
          .needs_two_per_process(false)  // no batch norm
          .optimizer(train::OptimizerOptions().kind(train::OptimizerKind::kSgd).momentum(0.9));
  DataLimits limits;
  ImageSet dataset = ImageSet::kFashionMnist;
  std::string data_dir;  // empty: the dataset's default directory
  // Random crop (4 pixels of black padding) and horizontal flip of every
  // training image, the standard CIFAR recipe.
  bool augment = false;
};

// Registers every flag, with ranges checked by CLI11 at parse time.
void add_train_flags(train::FlagTable& flags, TrainOptions& options);

}  // namespace dtrain::apps

// The images train_toycnn trains on, as its flags choose them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "classification.h"
#include "train_options.h"

namespace dtrain::apps {

struct ImageData {
  LabeledTensors train;  // inputs (N, channels, 32, 32) float32 in [-1, 1]
  LabeledTensors test;
  std::vector<std::string> class_names;
  std::string name;  // for logs: "Fashion-MNIST", "CIFAR-10"
  std::string root;  // where the files are
  int64_t channels = 0;
};

// --dataset from --data-dir (or the dataset's default directory), limited
// by --train-limit and --test-limit. Throws dtrain::Error when CIFAR-10 has
// no directory, and dtrain::IOError naming the directory or file when the
// data cannot be read.
ImageData load_image_data(const TrainOptions& options);

}  // namespace dtrain::apps

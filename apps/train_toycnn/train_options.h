// Flags of train_toycnn and their checks.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "train_flags.h"

namespace dtrain::apps {

struct TrainOptions : CommonTrainOptions {
  std::string data_dir;
  double momentum = 0.9;

  TrainOptions() { csv = "out/train_toycnn.csv"; }
};

// Registers every flag on `app`, with ranges checked by CLI11 at parse time.
void add_train_flags(CLI::App& app, TrainOptions& options);

}  // namespace dtrain::apps

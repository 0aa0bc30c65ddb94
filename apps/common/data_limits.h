// --train-limit and --test-limit, which every training app takes: train
// and test on the first N samples of each split (0: all).
#pragma once

#include <cstdint>
#include <string>

#include "dtrain/train/flag_table.h"

namespace dtrain::apps {

struct DataLimits {
  int64_t train = 0;
  int64_t test = 0;
};

// `noun` names a sample in the help texts ("clouds").
void add_data_limit_flags(train::FlagTable& flags, DataLimits& limits, const std::string& noun);

}  // namespace dtrain::apps

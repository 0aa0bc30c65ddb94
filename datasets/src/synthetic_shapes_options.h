// What the synthetic shapes' generator (synthetic_shapes.cpp) and their
// files (synthetic_shapes_files.cpp) share.
#pragma once

#include "dtrain/datasets/synthetic_shapes.h"

namespace dtrain::datasets {

// Bump whenever the generator's output changes for the same options. It is
// recorded in each dataset and is part of the default root, so a dataset
// made by an older dtrain is never taken for the current one.
constexpr int kSyntheticShapesVersion = 1;

// Throws dtrain::Error naming `caller`, the option and its value.
void check_synthetic_shapes_options(const SyntheticShapesOptions& options, const char* caller);

}  // namespace dtrain::datasets

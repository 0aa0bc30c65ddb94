// What the synthetic shapes' generator (synthetic_shapes.cpp) and their
// files (synthetic_shapes_files.cpp) share.
#pragma once

#include <ATen/core/Tensor.h>

#include "dtrain/datasets/synthetic_shapes.h"

namespace dtrain::datasets {

// Bump whenever the generator's output changes for the same options. It is
// recorded in each dataset and is part of the default root, so a dataset
// made by an older dtrain is never taken for the current one.
// 2: the files also hold every point's part ('pid') and ShapeNet-Part's file lists.
constexpr int kSyntheticShapesVersion = 2;

// Throws dtrain::Error naming `caller`, the option and its value.
void check_synthetic_shapes_options(const SyntheticShapesOptions& options, const char* caller);

// One split as generated: the clouds, and every point's part
// (synthetic_part_names()), (N, P) int64.
struct SyntheticSplit {
  LabeledClouds clouds;
  at::Tensor parts;
};

// What generate_synthetic_shapes and generate_synthetic_parts return, in
// one; errors name `caller`.
SyntheticSplit generate_synthetic_split(Split split, const SyntheticShapesOptions& options,
                                        const char* caller);

}  // namespace dtrain::datasets

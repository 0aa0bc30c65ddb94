// Flags of train_partseg and their checks.
#pragma once

#include <CLI/CLI.hpp>

#include "pointnet2_recipe.h"

namespace dtrain::apps {

// dataset: "synthetic" (the synthetic shapes' parts) or "shapenet-part"
// (ShapeNet-Part's published HDF5 files in data_dir); model: a
// PointNet2PartSeg preset.
struct PartSegTrainOptions : PointNet2RecipeOptions {
  PartSegTrainOptions() { csv = "out/train_partseg.csv"; }
};

// Registers every flag on `app`, with ranges checked by CLI11 at parse time.
void add_train_flags(CLI::App& app, PartSegTrainOptions& options);

}  // namespace dtrain::apps

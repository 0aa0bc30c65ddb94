// Flags of train_pointnet2 and their checks.
#pragma once

#include <CLI/CLI.hpp>

#include "pointnet2_recipe.h"

namespace dtrain::apps {

// dataset: "synthetic" or "modelnet40" (ModelNet40's published HDF5 files
// in data_dir); model: a PointNet2Cls preset.
struct PointNet2TrainOptions : PointNet2RecipeOptions {
  bool normals = false;      // feed normals as point features
  bool rotate = false;       // random rotation about the up axis as well
  double point_dropout = 0;  // largest share of points dropped per cloud

  PointNet2TrainOptions() { csv = "out/train_pointnet2.csv"; }
};

// The recipe's shared settings and --normals, --rotate, --point-dropout.
std::vector<dist::Setting> shared_settings(const PointNet2TrainOptions& options);

// Registers every flag on `app`, with ranges checked by CLI11 at parse time.
void add_train_flags(CLI::App& app, PointNet2TrainOptions& options);

}  // namespace dtrain::apps

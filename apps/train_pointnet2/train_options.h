// Flags of train_pointnet2 and their checks.
#pragma once

#include "dtrain/train/flag_table.h"
#include "pointnet2_recipe.h"

namespace dtrain::apps {

// --dataset synthetic, or modelnet40 (ModelNet40's published HDF5 files in
// --data-dir); --model: a PointNet2Cls preset.
struct PointNet2TrainOptions : PointNet2RecipeOptions {
  bool normals = false;      // feed normals as point features
  bool rotate = false;       // random rotation about the up axis as well
  double point_dropout = 0;  // largest share of points dropped per cloud
  bool eval_only = false;    // evaluate --checkpoint instead of training
  int64_t votes = 1;         // test-time voting: copies of each cloud scored

  PointNet2TrainOptions() { trainer.csv("out/train_pointnet2.csv"); }
};

// --dataset's words: "synthetic", "modelnet40".
const util::EnumWords<CloudData>& dataset_words();

// Registers every flag, with ranges checked by CLI11 at parse time.
void add_train_flags(train::FlagTable& flags, PointNet2TrainOptions& options);

// The topic of the evaluation flags in --help (--help evaluation).
inline constexpr const char* kEvaluationGroup = "Evaluation";
// --eval-only (which needs --checkpoint) and --votes, in kEvaluationGroup.
void add_evaluation_flags(train::FlagTable& flags, PointNet2TrainOptions& options);

}  // namespace dtrain::apps

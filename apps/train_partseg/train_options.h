// Flags of train_partseg and their checks.
#pragma once

#include "dtrain/train/flag_table.h"
#include "pointnet2_recipe.h"

namespace dtrain::apps {

// --dataset synthetic (the synthetic shapes' parts) or shapenet-part
// (ShapeNet-Part's published HDF5 files in --data-dir); --model: a
// PointNet2PartSeg preset.
struct PartSegTrainOptions : PointNet2RecipeOptions {
  PartSegTrainOptions() {
    trainer.csv("out/train_partseg.csv")
        .eval_batch(32)
        .report_columns({"instance_miou", "class_miou"})
        .best_by("instance_miou");
  }
};

// --dataset's words: "synthetic", "shapenet-part".
const util::EnumWords<CloudData>& dataset_words();

// Registers every flag, with ranges checked by CLI11 at parse time.
void add_train_flags(train::FlagTable& flags, PartSegTrainOptions& options);

}  // namespace dtrain::apps

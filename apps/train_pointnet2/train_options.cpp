#include "train_options.h"

#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/util/cli_checks.h"

namespace dtrain::apps {

using train::Agreement;

const util::EnumWords<CloudData>& dataset_words() {
  static const util::EnumWords<CloudData> words{{"synthetic", CloudData::kSynthetic},
                                                {"modelnet40", CloudData::kPublished}};
  return words;
}

void add_train_flags(train::FlagTable& flags, PointNet2TrainOptions& options) {
  add_data_flags(flags, options, dataset_words(),
                 "synthetic: the embedded synthetic shapes, generated on first use; modelnet40: "
                 "ModelNet40's HDF5 files (modelnet40_ply_hdf5_2048) in --data-dir",
                 "The dataset's own directory (synthetic shapes: written there when it is new or "
                 "empty; default: one directory per set of options under $DTRAIN_DATA_DIR or "
                 "~/.cache/dtrain/datasets; ModelNet40 from $DTRAIN_MODELNET_DIR)");
  flags.topic("Model");
  flags.add_switch("--normals", options.normals, "Feed surface normals as point features",
                   Agreement::same());
  flags
      .add("--model", options.model,
           "PointNet++ classifier: ssg, msg (the paper's) or ssg-lite (for CPUs)",
           Agreement::same())
      ->check(CLI::IsMember(models::pointnet2_cls_preset_names()))
      ->capture_default_str();
  add_recipe_flags(flags, options);
  flags.topic("Data");
  flags.add_switch("--rotate", options.rotate,
                   "Also rotate training clouds randomly about the up axis", Agreement::same());
  flags
      .add("--point-dropout", options.point_dropout,
           "Largest share of a training cloud's points dropped (PointNet++: 0.875)",
           Agreement::same())
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  add_evaluation_flags(flags, options);
}

void add_evaluation_flags(train::FlagTable& flags, PointNet2TrainOptions& options) {
  flags.topic(kEvaluationGroup);
  flags.add_switch("--eval-only", options.eval_only,
                   "Evaluate --checkpoint on the test set instead of training: OA, mAcc, "
                   "per-class accuracy and the confusion matrix, beside --csv",
                   Agreement::same());
  flags
      .add("--votes", options.votes,
           "Average the logits of this many copies of each test cloud, all but the first "
           "randomly rotated about the up axis and scaled (PointNet++'s voting; seeded by --seed)",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags.check([&options] {
    if (options.eval_only && options.trainer.checkpoint().empty()) {
      throw CLI::ValidationError("--eval-only", "needs --checkpoint, the file to evaluate");
    }
  });
}

}  // namespace dtrain::apps

#include "train_options.h"

#include "dtrain/models/pointnet2_part_seg.h"

namespace dtrain::apps {

const util::EnumWords<CloudData>& dataset_words() {
  static const util::EnumWords<CloudData> words{{"synthetic", CloudData::kSynthetic},
                                                {"shapenet-part", CloudData::kPublished}};
  return words;
}

void add_train_flags(train::FlagTable& flags, PartSegTrainOptions& options) {
  add_data_flags(flags, options, dataset_words(),
                 "synthetic: the embedded synthetic shapes and their parts, generated on first "
                 "use; shapenet-part: ShapeNet-Part's HDF5 files (hdf5_data) in --data-dir",
                 "The dataset's own directory (synthetic shapes: written there when it is new or "
                 "empty; default: one directory per set of options under $DTRAIN_DATA_DIR or "
                 "~/.cache/dtrain/datasets; ShapeNet-Part from $DTRAIN_SHAPENET_PART_DIR)");
  flags.topic("Model");
  flags
      .add("--model", options.model,
           "PointNet++ part segmentation: ssg (the paper's) or ssg-lite (for CPUs)",
           train::Agreement::same())
      ->check(CLI::IsMember(models::pointnet2_part_seg_preset_names()))
      ->capture_default_str();
  add_recipe_flags(flags, options);
}

}  // namespace dtrain::apps

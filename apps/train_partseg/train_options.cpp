#include "train_options.h"

#include "dtrain/models/pointnet2_part_seg.h"

namespace dtrain::apps {

void add_train_flags(CLI::App& app, PartSegTrainOptions& options) {
  take_last_flag_values(app);
  app.add_option("--dataset", options.dataset,
                 "synthetic: the embedded synthetic shapes and their parts, generated on first "
                 "use; shapenet-part: ShapeNet-Part's HDF5 files (hdf5_data) in --data-dir")
      ->check(CLI::IsMember({"synthetic", "shapenet-part"}))
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir,
                 "The dataset's own directory (synthetic shapes: written there when it is new "
                 "or empty; default: one directory per set of options under $DTRAIN_DATA_DIR "
                 "or ~/.cache/dtrain/datasets; ShapeNet-Part from $DTRAIN_SHAPENET_PART_DIR)");
  add_synthetic_flags(app, options);
  app.add_option("--model", options.model,
                 "PointNet++ part segmentation: ssg (the paper's) or ssg-lite (for CPUs)")
      ->check(CLI::IsMember(models::pointnet2_part_seg_preset_names()))
      ->capture_default_str();
  add_recipe_flags(app, options);
}

}  // namespace dtrain::apps

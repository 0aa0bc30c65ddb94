#include "train_options.h"

#include <fmt/format.h>

#include "dtrain/models/pointnet2_cls.h"

namespace dtrain::apps {

std::vector<dist::Setting> shared_settings(const PointNet2TrainOptions& options) {
  std::vector<dist::Setting> settings =
      shared_settings(static_cast<const PointNet2RecipeOptions&>(options));
  settings.insert(settings.end(), {{"--normals", fmt::format("{}", options.normals)},
                                   {"--rotate", fmt::format("{}", options.rotate)},
                                   {"--point-dropout", fmt::format("{}", options.point_dropout)}});
  return settings;
}

void add_train_flags(CLI::App& app, PointNet2TrainOptions& options) {
  take_last_flag_values(app);
  app.add_option("--dataset", options.dataset,
                 "synthetic: the embedded synthetic shapes, generated on first use; modelnet40: "
                 "ModelNet40's HDF5 files (modelnet40_ply_hdf5_2048) in --data-dir")
      ->check(CLI::IsMember({"synthetic", "modelnet40"}))
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir,
                 "The dataset's own directory (synthetic shapes: written there when it is new "
                 "or empty; default: one directory per set of options under $DTRAIN_DATA_DIR "
                 "or ~/.cache/dtrain/datasets; ModelNet40 from $DTRAIN_MODELNET_DIR)");
  add_synthetic_flags(app, options);
  app.add_flag("--normals", options.normals, "Feed surface normals as point features");
  app.add_option("--model", options.model,
                 "PointNet++ classifier: ssg, msg (the paper's) or ssg-lite (for CPUs)")
      ->check(CLI::IsMember(models::pointnet2_cls_preset_names()))
      ->capture_default_str();
  add_recipe_flags(app, options);
  app.add_flag("--rotate", options.rotate,
               "Also rotate training clouds randomly about the up axis");
  app.add_option("--point-dropout", options.point_dropout,
                 "Largest share of a training cloud's points dropped (PointNet++: 0.875)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
}

}  // namespace dtrain::apps

#include "train_options.h"

#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/models/pointnet2_cls.h"

namespace dtrain::apps {

void add_train_flags(CLI::App& app, PointNet2TrainOptions& options) {
  // A flag given twice takes its last value, as with argparse: scripts put
  // their defaults first and pass the user's arguments after them.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--dataset", options.dataset,
                 "synthetic: the embedded synthetic shapes, generated on first use; modelnet40: "
                 "ModelNet40's HDF5 files (modelnet40_ply_hdf5_2048) in --data-dir")
      ->check(CLI::IsMember({"synthetic", "modelnet40"}))
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir,
                 "Dataset directory (default: synthetic shapes under $DTRAIN_DATA_DIR or "
                 "~/.cache/dtrain/datasets; ModelNet40 from $DTRAIN_MODELNET_DIR)");
  app.add_option("--synthetic-classes", options.synthetic_classes,
                 "Kinds of shape in the synthetic dataset")
      ->check(
          CLI::Range(int64_t{2}, static_cast<int64_t>(datasets::synthetic_shape_names().size())))
      ->capture_default_str();
  app.add_option("--synthetic-train-per-class", options.synthetic_train_per_class,
                 "Synthetic training clouds of each class")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--synthetic-test-per-class", options.synthetic_test_per_class,
                 "Synthetic test clouds of each class")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--num-points", options.num_points, "Points of each cloud fed to the model")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--normals", options.normals, "Feed surface normals as point features");
  app.add_option("--model", options.model,
                 "PointNet++ classifier: ssg, msg (the paper's) or ssg-lite (for CPUs)")
      ->check(CLI::IsMember(models::pointnet2_cls_preset_names()))
      ->capture_default_str();
  add_common_train_flags(app, options, "clouds");
  app.add_option("--weight-decay", options.weight_decay, "Adam weight decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--lr-decay", options.lr_decay,
                 "Factor applied to the learning rate every --lr-step epochs")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--lr-step", options.lr_step, "Epochs between learning-rate decays")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--augment,!--no-augment", options.augment,
               "Randomly scale, shift and jitter training clouds and reorder their points")
      ->capture_default_str();
  app.add_flag("--rotate", options.rotate,
               "Also rotate training clouds randomly about the up axis");
  app.add_option("--point-dropout", options.point_dropout,
                 "Largest share of a training cloud's points dropped (PointNet++: 0.875)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  app.add_option("--checkpoint", options.checkpoint,
                 "Checkpoint file, written by rank 0 after every epoch (atomically)");
  app.add_flag("--resume", options.resume,
               "Continue from --checkpoint when it exists (every rank reads it)");
}

}  // namespace dtrain::apps

// train_pointnet2: a PointNet++ classifier on point clouds -- the embedded
// synthetic shapes by default, ModelNet40's HDF5 files with --dataset
// modelnet40 -- in one process or data-parallel over several, by
// dtrain::train::Trainer.
//
// Launched with a world size above 1 (dtrun, torchrun-style variables,
// mpirun or srun) it joins the process group, wraps the model in
// DistributedDataParallel and shards every epoch with DistributedSampler
// (or by --rank-weights, for mixed hardware); --batch-size is per process.
// Each epoch: Adam steps over augmented clouds (a progress bar on rank 0),
// then test loss and accuracy over the whole test set, logged and appended
// to the CSV report by rank 0, and a checkpoint when --checkpoint names
// one. The recipe is PointNet++'s (pointnet2_recipe.h): Adam at 1e-3 with
// weight decay 1e-4, the rate times 0.7 every 20 epochs, batch norm,
// dropout 0.5 in the head, random scale/shift/jitter.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "classification.h"
#include "dtrain/datasets/point_cloud_augment.h"
#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/train/trainer.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/cli_app.h"
#include "point_cloud_data.h"
#include "pointnet2_recipe.h"
#include "train_options.h"

namespace {

using dtrain::apps::PointNet2TrainOptions;
using dtrain::models::PointNet2Cls;

// Training-cloud augmentation drawing from each batch's own generator
// (batch_generator).
dtrain::train::TensorDataset::Augment make_augment(const PointNet2TrainOptions& options) {
  if (!options.augment && !options.rotate && options.point_dropout == 0) {
    return {};
  }
  auto augment = dtrain::datasets::PointCloudAugmentOptions()
                     .rotate_up(options.rotate)
                     .dropout_max(options.point_dropout)
                     .shuffle_points(options.augment);
  if (!options.augment) {
    augment.scale_min(1).scale_max(1).shift(0).jitter_sigma(0);
  }
  return [augment](const at::Tensor& points, at::Generator& generator) {
    return dtrain::datasets::augment_point_clouds(points, augment, generator);
  };
}

int train(const PointNet2TrainOptions& options, const dtrain::train::FlagTable& flags) {
  dtrain::train::Trainer trainer(
      dtrain::apps::trainer_options(options).model_name("PointNet++ " + options.model), flags);
  // The clouds' size against the model's (its layers do not depend on the
  // class count), before the data is read.
  dtrain::apps::check_num_points(options,
                                 dtrain::models::pointnet2_cls_preset(options.model, 2).layers());
  const dtrain::apps::PointCloudData data = dtrain::apps::load_point_cloud_data(options);
  torch::manual_seed(options.trainer.seed());
  PointNet2Cls model(dtrain::models::pointnet2_cls_preset(
      options.model, static_cast<int64_t>(data.class_names.size()), options.normals ? 3 : 0));
  model->to(trainer.device());
  const auto adam = dtrain::apps::adam(options, model->parameters());
  dtrain::train::TensorDataset train_set({data.train.inputs, data.train.labels},
                                         make_augment(options));
  train_set.summary(
      fmt::format("{} from {}: {} classes, {} training and {} test clouds of {} points{}",
                  dtrain::apps::dataset_words().word(options.data), data.root,
                  data.class_names.size(), data.train.size(), data.test.size(), options.num_points,
                  options.normals ? " with normals" : ""));
  return trainer.fit(model, *adam, train_set, dtrain::apps::classification_step<PointNet2Cls>(),
                     dtrain::apps::classification_evaluation<PointNet2Cls>(data.test));
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::train::set_up_training_process();
  CLI::App app{
      "Train a PointNet++ classifier on point clouds (CPU or GPU; data-parallel when launched with "
      "several processes by dtrun, mpirun or srun)",
      "train_pointnet2"};
  PointNet2TrainOptions options;
  dtrain::train::FlagTable flags(app);
  dtrain::apps::add_train_flags(flags, options);
  dtrain::train::add_trainer_help(flags, {"--dataset", "--data-dir", "--model"});
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options, flags); });
}

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
// then the test loss, overall accuracy and mean class accuracy over the
// whole test set, logged and appended to the CSV report by rank 0 (with a
// PNG of the curves beside it), and a checkpoint when --checkpoint names
// one. The recipe is PointNet++'s (pointnet2_recipe.h): Adam at 1e-3 with
// weight decay 1e-4, the rate times 0.7 every 20 epochs, batch norm,
// dropout 0.5 in the head, random scale/shift/jitter.
//
// --eval-only evaluates the --checkpoint instead, on as many processes as
// it is launched with, and writes the files of evaluation_files.h.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cloud_evaluation.h"
#include "dtrain/datasets/point_cloud_augment.h"
#include "dtrain/models/pointnet2_classifier.h"
#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/train/trainer.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/cli_app.h"
#include "evaluation_files.h"
#include "plots.h"
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

dtrain::apps::Voting voting(const PointNet2TrainOptions& options) {
  return {.votes = options.votes,
          .seed = static_cast<uint64_t>(options.trainer.seed()),
          .up_axis = dtrain::datasets::PointCloudAugmentOptions().up_axis()};
}

// The model's evaluation over the whole test set; `keep` (--eval-only)
// receives the whole result, every sample's prediction included.
dtrain::train::Evaluate<PointNet2Cls> cloud_evaluation(
    const PointNet2TrainOptions& options, const dtrain::apps::PointCloudData& data,
    std::optional<dtrain::apps::CloudEvaluation>* keep = nullptr) {
  return [&options, &data, keep](dtrain::train::JobModel<PointNet2Cls>& model,
                                 const dtrain::train::EvalContext& context) {
    auto result = dtrain::apps::evaluate_clouds(
        [&model](const at::Tensor& x) { return model.eval(x); }, data.test,
        static_cast<int64_t>(data.class_names.size()), voting(options), context,
        /*with_predictions=*/keep != nullptr);
    const dtrain::train::EvalStats stats = result.stats;
    if (keep != nullptr) {
      *keep = std::move(result);
    }
    return stats;
  };
}

// --eval-only: the checkpoint's scores, and rank 0 writes them down.
int evaluate_checkpoint(dtrain::train::Trainer& trainer, PointNet2Cls model,
                        const PointNet2TrainOptions& options,
                        const dtrain::apps::PointCloudData& data) {
  std::optional<dtrain::apps::CloudEvaluation> result;
  int rank = 0;
  auto evaluate = cloud_evaluation(options, data, &result);
  const auto evaluated = trainer.evaluate(model, [&](dtrain::train::JobModel<PointNet2Cls>& in_job,
                                                     const dtrain::train::EvalContext& context) {
    rank = context.job().rank;
    return evaluate(in_job, context);
  });
  if (rank == 0) {
    const auto written = dtrain::apps::write_evaluation_files(
        trainer.options().csv(), {.checkpoint = trainer.options().checkpoint(),
                                  .epochs_done = evaluated.epochs_done,
                                  .votes = options.votes,
                                  .result = &*result,
                                  .class_names = &data.class_names,
                                  .labels = &data.test.labels});
    const auto& confusion = result->confusion;
    spdlog::info("OA {:.4f}, mAcc {:.4f} over {} test clouds with {} vote(s); written: {}",
                 confusion.overall_accuracy(), confusion.mean_class_accuracy(), confusion.samples(),
                 options.votes, fmt::join(written, ", "));
  }
  return 0;
}

int train(const PointNet2TrainOptions& options, const dtrain::train::FlagTable& flags) {
  // The curves' PNG, drawn again after each epoch's row (rank 0 writes them).
  dtrain::apps::TrainingCurves curves;
  dtrain::train::Trainer trainer(
      dtrain::apps::trainer_options(options)
          .model_name("PointNet++ " + options.model)
          .report_columns(dtrain::apps::cloud_report_columns())
          .after_report_row([&curves](const std::string& csv) { curves.update(csv); }),
      flags);
  // The clouds' size against the model's (its layers do not depend on the
  // class count), before the data is read.
  dtrain::apps::check_num_points(options,
                                 dtrain::models::pointnet2_cls_preset(options.model, 2).layers());
  const dtrain::apps::PointCloudData data = dtrain::apps::load_point_cloud_data(options);
  trainer.set_checkpoint_notes(dtrain::models::pointnet2_cls_notes(
      {options.model, data.class_names, options.num_points, options.normals}));
  torch::manual_seed(options.trainer.seed());
  PointNet2Cls model(dtrain::models::pointnet2_cls_preset(
      options.model, static_cast<int64_t>(data.class_names.size()), options.normals ? 3 : 0));
  model->to(trainer.device());
  if (options.eval_only) {
    return evaluate_checkpoint(trainer, model, options, data);
  }
  const auto optimizer = dtrain::apps::make_optimizer(options, *model);
  dtrain::train::TensorDataset train_set({data.train.inputs, data.train.labels},
                                         make_augment(options));
  train_set.summary(
      fmt::format("{} from {}: {} classes, {} training and {} test clouds of {} points{}",
                  dtrain::apps::dataset_words().word(options.data), data.root,
                  data.class_names.size(), data.train.size(), data.test.size(), options.num_points,
                  options.normals ? " with normals" : ""));
  return trainer.fit(model, *optimizer, train_set,
                     dtrain::apps::classification_step<PointNet2Cls>(options.label_smoothing),
                     cloud_evaluation(options, data));
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::train::set_up_training_process();
  CLI::App app{
      "Train a PointNet++ classifier on point clouds (CPU or GPU; data-parallel when launched with "
      "several processes by dtrun, mpirun or srun), or evaluate a checkpoint (--eval-only)",
      "train_pointnet2"};
  PointNet2TrainOptions options;
  dtrain::train::FlagTable flags(app);
  dtrain::apps::add_train_flags(flags, options);
  dtrain::train::add_trainer_help(flags, {"--dataset", "--data-dir", "--model"});
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options, flags); });
}

// train_partseg: PointNet++ part segmentation -- a part label for every
// point of a cloud whose object category is known -- on the embedded
// synthetic shapes (a cube's top, bottom and sides, ...) by default, or on
// ShapeNet-Part's HDF5 files with --dataset shapenet-part; in one process
// or data-parallel over several (dtrun, torchrun-style variables, mpirun or
// srun: DistributedDataParallel and DistributedSampler, or --rank-weights
// for mixed hardware; --batch-size per process), by dtrain::train::Trainer.
//
// Each epoch: Adam steps over augmented clouds (a progress bar on rank 0),
// then the test set's loss, point accuracy, instance mIoU and class mIoU
// as PointNet++ reports them, logged and appended to the CSV report by rank
// 0, and a checkpoint when --checkpoint names one. The recipe is
// PointNet++'s (pointnet2_recipe.h), as in train_pointnet2.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/models/pointnet2_part_seg.h"
#include "dtrain/train/trainer.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/cli_app.h"
#include "part_data.h"
#include "plots.h"
#include "pointnet2_recipe.h"
#include "segmentation.h"
#include "train_options.h"

namespace {

using namespace dtrain::apps;
using dtrain::models::PointNet2PartSeg;
using Model = dtrain::train::JobModel<PointNet2PartSeg>;

// Scale, shift and jitter, and a new point order, drawn from each batch's
// own generator (batch_generator); none without --augment.
std::optional<dtrain::datasets::PointCloudAugmentOptions> make_augment(
    const PartSegTrainOptions& options) {
  if (!options.augment) {
    return std::nullopt;
  }
  return dtrain::datasets::PointCloudAugmentOptions();
}

int train(const PartSegTrainOptions& options, const dtrain::train::FlagTable& flags) {
  // The curves' PNG, drawn again after each epoch's row (rank 0 writes them).
  dtrain::apps::TrainingCurves curves;
  dtrain::train::Trainer trainer(
      trainer_options(options)
          .model_name("PointNet++ part segmentation " + options.model)
          // Which model a checkpoint holds, for programs that load it alone.
          .checkpoint_notes({{"model", "PointNet2PartSeg"}, {"preset", options.model}})
          .after_report_row([&curves](const std::string& csv) { curves.update(csv); }),
      flags);
  // The clouds' size against the model's (its layers do not depend on the
  // part and category counts), before the data is read.
  check_num_points(options,
                   dtrain::models::pointnet2_part_seg_preset(options.model, 2, 1).layers());
  const PartData data = load_part_data(options);
  torch::manual_seed(options.trainer.seed());
  PointNet2PartSeg model(dtrain::models::pointnet2_part_seg_preset(
      options.model, data.num_parts, static_cast<int64_t>(data.train.category_names.size())));
  model->to(trainer.device());
  const auto optimizer = make_optimizer(options, *model);
  const PartDataset train_set(
      data.train, make_augment(options),
      fmt::format("{} from {}: {} categories, {} parts, {} training and {} test clouds of {} "
                  "points",
                  dataset_words().word(options.data), data.root, data.train.category_names.size(),
                  data.num_parts, data.train.size(), data.test.size(), options.num_points));
  return trainer.fit(
      model, *optimizer, train_set,
      [smoothing = options.label_smoothing](Model& net, const dtrain::train::Batch& batch) {
        return torch::nn::functional::cross_entropy(
            net.train(batch[0], batch[2]), batch[1],
            torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(smoothing));
      },
      [&data](Model& net, const dtrain::train::EvalContext& context) {
        const SegmentationForward forward = [&net](const at::Tensor& points,
                                                   const at::Tensor& categories) {
          return net.eval(points, categories);
        };
        return segmentation_evaluate(forward, data.test, data.owned, context);
      });
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::train::set_up_training_process();
  CLI::App app{
      "Train PointNet++ part segmentation on point clouds (CPU or GPU; data-parallel when launched "
      "with several processes by dtrun, mpirun or srun)",
      "train_partseg"};
  PartSegTrainOptions options;
  dtrain::train::FlagTable flags(app);
  add_train_flags(flags, options);
  dtrain::train::add_trainer_help(flags, {"--dataset", "--data-dir", "--model"});
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options, flags); });
}

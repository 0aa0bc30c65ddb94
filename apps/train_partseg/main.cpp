// train_partseg: PointNet++ part segmentation -- a part label for every
// point of a cloud whose object category is known -- on the embedded
// synthetic shapes (a cube's top, bottom and sides, ...) by default, or on
// ShapeNet-Part's HDF5 files with --dataset shapenet-part; in one process
// or data-parallel over several (dtrun, torchrun-style variables, mpirun or
// srun: DistributedDataParallel and DistributedSampler, or --rank-weights
// for mixed hardware; --batch-size per process).
//
// Each epoch: Adam steps over augmented clouds (a progress bar on rank 0),
// then the test set's loss, point accuracy, instance mIoU and class mIoU
// as PointNet++ reports them, logged and appended to the CSV report by rank
// 0, and a checkpoint when --checkpoint names one. The recipe is
// PointNet++'s (pointnet2_recipe.h), as in train_pointnet2.

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/models/pointnet2_part_seg.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "part_data.h"
#include "pointnet2_recipe.h"
#include "segmentation_loop.h"
#include "train_options.h"
#include "training_job.h"
#include "training_run.h"

namespace {

using namespace dtrain::apps;
using dtrain::models::PointNet2PartSeg;

// Scale, shift and jitter, and a new point order, drawn from each batch's
// own generator (batch_generator); none without --augment.
std::optional<dtrain::datasets::PointCloudAugmentOptions> make_augment(
    const PartSegTrainOptions& options) {
  if (!options.augment) {
    return std::nullopt;
  }
  return dtrain::datasets::PointCloudAugmentOptions();
}

int train(const PartSegTrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  const dtrain::util::LaunchEnv env = dtrain::apps::launch_env(options.join);
  // First: a missing GPU is named before any data is read.
  const c10::Device device = choose_device(env, options.device);
  // Then the clouds' size against the model's (its layers do not depend
  // on the part and category counts).
  dtrain::apps::check_num_points(
      options, dtrain::models::pointnet2_part_seg_preset(options.model, 2, 1).layers());
  const PartData data = load_part_data(options);
  torch::manual_seed(options.seed);
  PointNet2PartSeg model(dtrain::models::pointnet2_part_seg_preset(
      options.model, data.num_parts, static_cast<int64_t>(data.train.category_names.size())));
  model->to(device);
  TrainingTask<PointNet2PartSeg> task{
      .model = model,
      .model_name = "PointNet++ part segmentation " + options.model,
      .data_summary = fmt::format(
          "{} from {}: {} categories, {} parts, {} training and {} test clouds of {} points",
          options.dataset, data.root, data.train.category_names.size(), data.num_parts,
          data.train.size(), data.test.size(), options.num_points),
      .noun = "clouds",
      .train_size = data.train.size(),
      .train_labels = {data.train.categories, data.train.parts},
      .needs_two_per_process = true,
      .eval_batch = 32,
      .extra_columns = segmentation_metric_names(),
      .shared_settings = dtrain::apps::shared_settings(options),
      .optimizer = adam_training_optimizer(options, model->parameters()),
      .train_batches =
          [&](JobModel<PointNet2PartSeg>& job_model) {
            const SegmentationForward forward = [&job_model](const at::Tensor& points,
                                                             const at::Tensor& categories) {
              return job_model.train(points, categories);
            };
            return segmentation_batches(forward, data.train, make_augment(options));
          },
      .evaluate =
          [&](JobModel<PointNet2PartSeg>& job_model, const LoopSettings& settings, const Job& job) {
            const SegmentationForward forward = [&job_model](const at::Tensor& points,
                                                             const at::Tensor& categories) {
              return job_model.eval(points, categories);
            };
            return segmentation_evaluate(forward, *model, data.test, data.owned, settings, job);
          }};
  return run_training(options, env, device, std::move(task));
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::apps::name_rank_in_errors();
  CLI::App app{
      "Train PointNet++ part segmentation on point clouds (CPU or GPU; data-parallel when launched "
      "with several processes by dtrun, mpirun or srun)",
      "train_partseg"};
  PartSegTrainOptions options;
  add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

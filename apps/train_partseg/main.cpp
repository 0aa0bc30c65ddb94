// train_partseg: PointNet++ part segmentation -- a part label for every
// point of a cloud whose object category is known -- on the embedded
// synthetic shapes (a cube's top, bottom and sides, ...) by default, or on
// ShapeNet-Part's HDF5 files with --dataset shapenet-part; in one process
// or data-parallel over several (dtrun, torchrun-style variables, mpirun or
// srun: DistributedDataParallel and DistributedSampler, --batch-size per
// process).
//
// Each epoch: Adam steps over augmented clouds (a progress bar on rank 0),
// then the test set's loss, point accuracy, instance mIoU and class mIoU
// as PointNet++ reports them, logged and appended to the CSV report by rank
// 0, and a checkpoint when --checkpoint names one. The recipe is
// PointNet++'s (pointnet2_recipe.h), as in train_pointnet2.
#include <chrono>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/models/pointnet2_part_seg.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "epoch_report.h"
#include "job_model.h"
#include "part_data.h"
#include "pointnet2_recipe.h"
#include "segmentation_loop.h"
#include "train_options.h"
#include "training_job.h"

namespace {

using namespace dtrain::apps;
using dtrain::models::PointNet2PartSeg;

// Scale, shift and jitter, and a new point order, from this epoch's own
// generator (augment_generator); none without --augment.
std::optional<SegmentationAugment> make_augment(const PartSegTrainOptions& options, const Job& job,
                                                int epoch) {
  if (!options.augment) {
    return std::nullopt;
  }
  return SegmentationAugment{dtrain::data::PointCloudAugmentOptions(),
                             augment_generator(options, job, epoch)};
}

int train(const PartSegTrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  const dtrain::util::LaunchEnv env = dtrain::util::read_launch_env();
  const c10::Device device = choose_device(env, options.device);
  const PartData data = load_part_data(options);
  torch::manual_seed(options.seed);
  PointNet2PartSeg model(dtrain::models::pointnet2_part_seg_preset(
      options.model, data.num_parts, static_cast<int64_t>(data.train.category_names.size())));
  model->to(device);
  // fp16 steps go through a loss scaler, checkpointed with the model.
  const auto scaler = dtrain::apps::make_loss_scaler(options);
  // The rate is set at the start of every epoch (set_adam_lr).
  torch::optim::Adam optimizer(
      model->parameters(),
      torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));
  const int64_t epochs_done = resume_from_checkpoint(options, *model, optimizer, scaler.get());
  // Opened before joining the job, so a bad path fails early; a resumed run
  // continues the report of the run it continues.
  EpochReport report(options.csv, /*writes=*/env.rank.value_or(0) == 0, options.epochs,
                     /*append=*/epochs_done > 0, segmentation_metric_names());
  const Job job = start_job(env, options.backend, options.dist_timeout_s, device);
  check_same_resume_point(job, epochs_done);
  // Dropout masks from a stream of each rank's own.
  torch::manual_seed(options.seed + 1 + static_cast<uint64_t>(job.rank));
  spdlog::info(
      "{} from {}: {} categories, {} parts, {} training and {} test clouds of {} points; {} "
      "process(es) on {}, {} thread(s) each",
      options.dataset, data.root, data.train.category_names.size(), data.num_parts,
      data.train.size(), data.test.size(), options.num_points, job.world, device.str(),
      at::get_num_threads());
  const int first_epoch = static_cast<int>(epochs_done) + 1;
  if (first_epoch > options.epochs) {
    spdlog::info("{} already holds {} epochs and --epochs is {}: nothing left to train",
                 options.checkpoint, epochs_done, options.epochs);
    finish_job(job);
    return 0;
  }
  JobModel<PointNet2PartSeg> job_model(model, job);
  dtrain::data::DistributedSampler sampler(
      data.train.size(), dtrain::data::DistributedSamplerOptions(job.world, job.rank)
                             .seed(static_cast<int64_t>(options.seed)));
  spdlog::info(
      "PointNet++ part segmentation {} ({} parameters); precision {}; {} clouds per process per "
      "epoch, batch {} per process; Adam at {} ({} scaling), x{} every {} epochs",
      options.model, parameter_count(*model), precision_name(options), sampler.num_samples(),
      options.batch_size, options.scaled_lr(job.world), options.lr_scaling, options.lr_decay,
      options.lr_step);

  const LoopSettings settings = loop_settings(options, job, /*eval_batch=*/32, scaler.get());
  const SegmentationForward train_forward = [&](const at::Tensor& points,
                                                const at::Tensor& categories) {
    return job_model.train(points, categories);
  };
  const SegmentationForward eval_forward = [&](const at::Tensor& points,
                                               const at::Tensor& categories) {
    return job_model.eval(points, categories);
  };
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = first_epoch; epoch <= options.epochs; ++epoch) {
    set_adam_lr(optimizer, lr_at(options, job.world, epoch));
    const EpochStats stats = train_epoch(
        *model, optimizer, sampler, settings, epoch, job,
        segmentation_loss(train_forward, data.train, make_augment(options, job, epoch), device));
    const CommStats comm = job_model.take_comm_stats();
    eval = segmentation_evaluate(eval_forward, *model, data.test, data.owned, settings, job);
    // The row before the checkpoint: a crash between the two repeats the
    // epoch on resume (its row then appears twice) rather than losing it.
    report.record(epoch, stats, eval, comm);
    if (!options.checkpoint.empty() && job.rank == 0) {
      dtrain::train::save_checkpoint(options.checkpoint, *model, optimizer, epoch, scaler.get());
    }
  }
  report.finish(eval,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count(),
                job.world);
  finish_job(job);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train PointNet++ part segmentation on point clouds (CPU or GPU; data-parallel when launched "
      "with several processes by dtrun, mpirun or srun)",
      "train_partseg"};
  PartSegTrainOptions options;
  add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

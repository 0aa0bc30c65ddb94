// train_pointnet2: a PointNet++ classifier on point clouds -- the embedded
// synthetic shapes by default, ModelNet40's HDF5 files with --dataset
// modelnet40 -- in one process or data-parallel over several.
//
// Launched with a world size above 1 (dtrun, torchrun-style variables,
// mpirun or srun) it joins the process group, wraps the model in
// DistributedDataParallel and shards every epoch with DistributedSampler;
// --batch-size is per process. Each epoch: Adam steps over augmented
// clouds (a progress bar on rank 0), then test loss and accuracy over the
// whole test set, logged and appended to the CSV report by rank 0, and a
// checkpoint when --checkpoint names one. The recipe is PointNet++'s:
// Adam at 1e-3 with weight decay 1e-4, the rate times 0.7 every 20 epochs,
// batch norm, dropout 0.5 in the head, random scale/shift/jitter.
#include <chrono>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>

#include "classification_loop.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/data/point_cloud_augment.h"
#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"
#include "epoch_report.h"
#include "job_model.h"
#include "point_cloud_data.h"
#include "pointnet2_recipe.h"
#include "train_options.h"
#include "training_job.h"

namespace {

using dtrain::apps::EpochReport;
using dtrain::apps::EpochStats;
using dtrain::apps::EvalStats;
using dtrain::apps::Job;
using dtrain::apps::LoopSettings;
using dtrain::apps::PointNet2TrainOptions;
using dtrain::models::PointNet2Cls;

// Training-cloud augmentation drawing from its own generator
// (augment_generator).
dtrain::apps::Augment make_augment(const PointNet2TrainOptions& options, const Job& job,
                                   int epoch) {
  if (!options.augment && !options.rotate && options.point_dropout == 0) {
    return {};
  }
  auto augment = dtrain::data::PointCloudAugmentOptions()
                     .rotate_up(options.rotate)
                     .dropout_max(options.point_dropout)
                     .shuffle_points(options.augment);
  if (!options.augment) {
    augment.scale_min(1).scale_max(1).shift(0).jitter_sigma(0);
  }
  return [augment, generator = dtrain::apps::augment_generator(options, job, epoch)](
             const at::Tensor& points) {
    return dtrain::data::augment_point_clouds(points, augment, generator);
  };
}

int train(const PointNet2TrainOptions& options) {
  if (options.threads > 0) {
    at::set_num_threads(options.threads);
  }
  const dtrain::util::LaunchEnv env = dtrain::util::read_launch_env();
  const c10::Device device = dtrain::apps::choose_device(env, options.device);
  const dtrain::apps::PointCloudData data = dtrain::apps::load_point_cloud_data(options);
  torch::manual_seed(options.seed);
  PointNet2Cls model(dtrain::models::pointnet2_cls_preset(
      options.model, static_cast<int64_t>(data.class_names.size()), options.normals ? 3 : 0));
  model->to(device);
  // fp16 steps go through a loss scaler, checkpointed with the model.
  const auto scaler = dtrain::apps::make_loss_scaler(options);
  // The rate is set at the start of every epoch (set_adam_lr).
  torch::optim::Adam optimizer(
      model->parameters(),
      torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));
  const int64_t epochs_done =
      dtrain::apps::resume_from_checkpoint(options, *model, optimizer, scaler.get());
  // Opened before joining the job, so a bad path fails early. A resumed run
  // adds its epochs to the report of the run it continues; a run from epoch
  // 1 starts the report afresh.
  EpochReport report(options.csv, /*writes=*/env.rank.value_or(0) == 0, options.epochs,
                     /*append=*/epochs_done > 0);
  const Job job = dtrain::apps::start_job(env, options.backend, options.dist_timeout_s, device);
  dtrain::apps::check_same_resume_point(job, epochs_done);
  // Dropout masks from a stream of each rank's own (the weights came from
  // `seed` alone, and DDP starts every rank from rank 0's anyway).
  torch::manual_seed(options.seed + 1 + static_cast<uint64_t>(job.rank));
  spdlog::info(
      "{} from {}: {} classes, {} training and {} test clouds of {} points{}; {} "
      "process(es) on {}, {} thread(s) each",
      options.dataset, data.root, data.class_names.size(), data.train.size(), data.test.size(),
      options.num_points, options.normals ? " with normals" : "", job.world, device.str(),
      at::get_num_threads());
  const int first_epoch = static_cast<int>(epochs_done) + 1;
  if (first_epoch > options.epochs) {
    spdlog::info("{} already holds {} epochs and --epochs is {}: nothing left to train",
                 options.checkpoint, epochs_done, options.epochs);
    dtrain::apps::finish_job(job);
    return 0;
  }
  dtrain::apps::JobModel<PointNet2Cls> job_model(model, job);
  dtrain::data::DistributedSampler sampler(
      data.train.size(), dtrain::data::DistributedSamplerOptions(job.world, job.rank)
                             .seed(static_cast<int64_t>(options.seed)));
  spdlog::info(
      "PointNet++ {} ({} parameters); precision {}; {} clouds per process per epoch, batch {} "
      "per process; Adam at {} ({} scaling), x{} every {} epochs",
      options.model, dtrain::apps::parameter_count(*model), dtrain::apps::precision_name(options),
      sampler.num_samples(), options.batch_size, options.scaled_lr(job.world), options.lr_scaling,
      options.lr_decay, options.lr_step);

  const LoopSettings settings =
      dtrain::apps::loop_settings(options, job, /*eval_batch=*/64, scaler.get());
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = first_epoch; epoch <= options.epochs; ++epoch) {
    dtrain::apps::set_adam_lr(optimizer, dtrain::apps::lr_at(options, job.world, epoch));
    const EpochStats stats =
        dtrain::apps::train_epoch(job_model.train_forward(), *model, optimizer, data.train, sampler,
                                  settings, epoch, job, make_augment(options, job, epoch));
    const dtrain::apps::CommStats comm = job_model.take_comm_stats();
    eval = dtrain::apps::evaluate(job_model.eval_forward(), *model, data.test, settings, job);
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
  dtrain::apps::finish_job(job);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train a PointNet++ classifier on point clouds (CPU or GPU; data-parallel when launched with "
      "several processes by dtrun, mpirun or srun)",
      "train_pointnet2"};
  PointNet2TrainOptions options;
  dtrain::apps::add_train_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
}

#include "run_checkpoints.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace {

// The position of a mid-epoch checkpoint, beside the steps the checkpoint
// itself records.
constexpr const char* kPositionKey = "epoch/position";  // loss sum, samples
// The samples no process had reached (Sharding::untrained), and whether the
// epoch was itself split from such a rest.
constexpr const char* kRestKey = "epoch/rest";
constexpr const char* kSplitOfRestKey = "epoch/split_of_rest";

// A flag saved as a one-element tensor.
bool flag(const std::map<std::string, at::Tensor>& values, const char* key) {
  const auto it = values.find(key);
  return it != values.end() && it->second.numel() == 1 && it->second.item<int64_t>() != 0;
}

}  // namespace

RunCheckpoints::RunCheckpoints(const CommonTrainOptions& options, int rank,
                               torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                               amp::GradScaler* scaler)
    : path_(options.checkpoint), module_(&module), optimizer_(&optimizer), scaler_(scaler) {
  if (path_.empty()) {
    return;
  }
  if (rank == 0) {
    train::check_checkpoint_path(path_);  // the writer's: before any training
  }
  if (!options.resume) {
    return;
  }
  loaded_ = train::load_checkpoint_progress(path_, module, optimizer, scaler);
  if (!loaded_) {
    spdlog::info("no checkpoint at {} yet: starting at epoch 1", path_);
  } else if (loaded_->steps_done == 0) {
    spdlog::info("resumed from {} after epoch {}", path_, loaded_->epochs_done);
  } else {
    spdlog::info("resumed from {} after step {} of epoch {}", path_, loaded_->steps_done,
                 loaded_->epochs_done + 1);
  }
}

void RunCheckpoints::check_same_resume_point(const Job& job) const {
  if (!job.distributed()) {
    return;
  }
  const int64_t epochs = epochs_done();
  const int64_t steps = loaded_ ? loaded_->steps_done : 0;
  at::Tensor extremes = at::tensor({epochs, -epochs, steps, -steps}, at::kLong);
  dist::all_reduce(extremes, dist::ReduceOp::kMax);
  const auto most = extremes.data_ptr<int64_t>();
  DTRAIN_CHECK(most[0] == -most[1] && most[2] == -most[3],
               "the ranks would resume from different points (epochs ", -most[1], " to ", most[0],
               ", steps ", -most[3], " to ", most[2], "; this rank: epoch ", epochs, " step ",
               steps, "): every rank must read the same --checkpoint file");
}

EpochPosition RunCheckpoints::start(Sharding& sharding, const Job& job) const {
  if (!loaded_) {
    return {};
  }
  const bool same_split = sharding.restore(loaded_->extra);
  if (loaded_->steps_done == 0) {
    return {};
  }
  const auto& extra = loaded_->extra;
  const int epoch = static_cast<int>(loaded_->epochs_done) + 1;
  const auto position = extra.find(kPositionKey);
  const auto rest = extra.find(kRestKey);
  if (position == extra.end() || position->second.numel() != 2) {
    if (job.rank == 0) {
      spdlog::warn(
          "{} was written {} steps into epoch {} but holds no position in it: epoch {} "
          "starts again from its first step",
          path_, loaded_->steps_done, epoch, epoch);
    }
    return {};
  }
  const at::Tensor sums = position->second.to(at::kDouble);
  EpochPosition start{.steps = loaded_->steps_done,
                      .loss_sum = sums[0].item<double>(),
                      .samples = static_cast<int64_t>(sums[1].item<double>())};
  // The same split: on at the very step, exactly as an unbroken run.
  if (same_split && !flag(extra, kSplitOfRestKey)) {
    return start;
  }
  // Another split (processes, batch, weights): the samples not yet trained
  // in the epoch, split among this run's processes.
  const at::Tensor untrained = rest == extra.end() ? at::Tensor() : rest->second.to(at::kLong);
  if (!untrained.defined() || !sharding.same_dataset(extra)) {
    if (job.rank == 0) {
      spdlog::warn(
          "{} was written {} steps into epoch {} under another split and {}: epoch {} "
          "starts again from its first step",
          path_, loaded_->steps_done, epoch,
          untrained.defined() ? "for a dataset of another size" : "does not list the samples left",
          epoch);
    }
    return {};
  }
  sharding.continue_with(epoch,
                         std::vector<int64_t>(untrained.data_ptr<int64_t>(),
                                              untrained.data_ptr<int64_t>() + untrained.numel()));
  start.steps = 0;  // into the rest's own split
  return start;
}

void RunCheckpoints::save(int64_t epochs_done, const EpochPosition& position,
                          const Sharding& sharding, const Job& job) {
  if (path_.empty() || job.rank != 0) {
    return;
  }
  train::TrainingProgress progress{
      .epochs_done = epochs_done, .steps_done = position.steps, .extra = sharding.state()};
  if (position.steps > 0) {
    const int epoch = static_cast<int>(epochs_done) + 1;
    progress.extra[kPositionKey] =
        at::tensor({position.loss_sum, static_cast<double>(position.samples)}, at::kDouble);
    progress.extra[kRestKey] = at::tensor(sharding.untrained(epoch, position.steps), at::kLong);
    progress.extra[kSplitOfRestKey] =
        at::tensor({static_cast<int64_t>(sharding.splits_rest(epoch))}, at::kLong);
  }
  writer_.save(path_, *module_, *optimizer_, progress, scaler_);
}

void RunCheckpoints::finish() {
  writer_.wait();
}

int RunCheckpoints::stopped(int sig, int64_t epochs_done, int64_t steps_done, const Job& job) {
  finish();
  if (job.rank == 0) {
    spdlog::warn(
        "stopped by signal {} after {}: {} holds the run there; the same command with --resume "
        "continues from it",
        sig,
        steps_done > 0 ? fmt::format("step {} of epoch {}", steps_done, epochs_done + 1)
                       : fmt::format("epoch {}", epochs_done),
        path_);
  }
  finish_job(job);
  return 128 + sig;
}

}  // namespace dtrain::apps

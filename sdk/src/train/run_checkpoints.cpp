#include "dtrain/train/run_checkpoints.h"

#include <ATen/ATen.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <filesystem>
#include <limits>

#include "dtrain/dist/init.h"
#include "dtrain/train/slurm_requeue.h"
#include "dtrain/util/errors.h"

namespace dtrain::train {

namespace {

// The position of a mid-epoch checkpoint, beside the steps the checkpoint
// itself records.
constexpr const char* kPositionKey = "epoch/position";  // loss sum, samples
// The samples no process had reached (Sharding::untrained), and whether the
// epoch was itself split from such a rest.
constexpr const char* kRestKey = "epoch/rest";
constexpr const char* kSplitOfRestKey = "epoch/split_of_rest";
// Each evaluated epoch and its --best-by value (BestEpochs::as_tensor).
constexpr const char* kBestEpochsKey = "epochs/best_by";

// A flag saved as a one-element tensor.
bool flag(const std::map<std::string, at::Tensor>& values, const char* key) {
  const auto it = values.find(key);
  return it != values.end() && it->second.numel() == 1 && it->second.item<int64_t>() != 0;
}

// Note [Each epoch's checkpoint kept]
// --keep-epoch-checkpoints keeps every epoch's checkpoint, as the seed
// saves "%d.ckpt" % epoch. The epoch's state is already written to the
// checkpoint file, in the background; once it is on disk (at the next
// save or at the end), that file is hard-linked under the epoch's name.
// Checkpoints replace the file by renaming a new one over it, so the link
// keeps the epoch's contents while the checkpoint file moves on; no state
// is serialized twice and nothing is copied. Where the file system has no
// hard links, the file is copied (to a temporary name, then renamed).
std::string epoch_checkpoint_path(const std::string& path, int64_t epoch) {
  const std::filesystem::path file(path);
  return (file.parent_path() /
          (file.stem().string() + ".epoch" + std::to_string(epoch) + file.extension().string()))
      .string();
}

// Where --keep-best keeps an epoch's checkpoint: out/ckpt.best.epoch7.pt.
std::string best_checkpoint_path(const std::string& path, int64_t epoch) {
  const std::filesystem::path file(path);
  return (file.parent_path() / (file.stem().string() + ".best.epoch" + std::to_string(epoch) +
                                file.extension().string()))
      .string();
}

// `path`'s contents, once on disk, also under `kept`: a hard link, or a
// copy (to a temporary name, then renamed) where there are none.
void keep_as(const std::string& path, const std::string& kept) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::remove(kept, error);  // from an earlier run: this state replaces it
  fs::create_hard_link(path, kept, error);
  if (error) {
    const std::string partial = kept + ".tmp";
    fs::copy_file(path, partial, fs::copy_options::overwrite_existing);
    fs::rename(partial, kept);
  }
}

}  // namespace

RunCheckpoints::RunCheckpoints(const TrainerOptions& options, int rank, torch::nn::Module& module,
                               torch::optim::Optimizer& optimizer, amp::GradScaler* scaler)
    : path_(options.checkpoint()),
      keep_epochs_(options.keep_epoch_checkpoints()),
      notes_(options.checkpoint_notes()),
      keep_best_(options.keep_best()),
      best_by_(options.best_by()),
      report_columns_(options.report_columns()),
      patience_(options.early_stop_patience()),
      min_delta_(options.early_stop_min_delta()),
      best_(options.best_lower()),
      module_(&module),
      optimizer_(&optimizer),
      scaler_(scaler) {
  if (path_.empty()) {
    return;
  }
  if (rank == 0) {
    check_checkpoint_path(path_);  // the writer's: before any training
  }
  // In a Slurm job a checkpoint path implies --resume: a requeued job runs
  // its script unchanged (train/slurm_requeue.h).
  const std::string slurm = slurm_job_summary();
  if (!options.resume() && slurm.empty()) {
    return;
  }
  const std::string why = options.resume() ? "" : "in a Slurm job (" + slurm + ") ";
  try {
    loaded_ = load_checkpoint_progress(path_, module, optimizer, scaler);
  } catch (const Error& e) {
    if (why.empty()) {
      throw;
    }
    throw Error(std::string(e.what()) + "; " + why + "--checkpoint implies --resume: give " +
                "this job a --checkpoint path of its own, or delete " + path_);
  }
  if (loaded_) {
    if (const auto record = loaded_->extra.find(kBestEpochsKey); record != loaded_->extra.end()) {
      best_.load(record->second);
    }
  }
  if (!loaded_) {
    spdlog::info("{}no checkpoint at {} yet: starting at epoch 1", why, path_);
  } else if (loaded_->steps_done == 0) {
    spdlog::info("{}resumed from {} after epoch {}", why, path_, loaded_->epochs_done);
  } else {
    spdlog::info("{}resumed from {} after step {} of epoch {}", why, path_, loaded_->steps_done,
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
  TrainingProgress progress{.epochs_done = epochs_done,
                            .steps_done = position.steps,
                            .extra = sharding.state(),
                            .notes = notes_};
  if (position.steps > 0) {
    const int epoch = static_cast<int>(epochs_done) + 1;
    progress.extra[kPositionKey] =
        at::tensor({position.loss_sum, static_cast<double>(position.samples)}, at::kDouble);
    progress.extra[kRestKey] = at::tensor(sharding.untrained(epoch, position.steps), at::kLong);
    progress.extra[kSplitOfRestKey] =
        at::tensor({static_cast<int64_t>(sharding.splits_rest(epoch))}, at::kLong);
  }
  if (!best_.empty()) {
    progress.extra[kBestEpochsKey] = best_.as_tensor();
  }
  keep_pending_epoch();  // before the file moves on
  keep_best_copies();
  writer_.save(path_, *module_, *optimizer_, progress, scaler_);
  if (keep_epochs_ && position.steps == 0 && epochs_done > 0) {
    pending_epoch_ = epochs_done;
  }
  if (keep_best_ > 0 && position.steps == 0 && epochs_done > 0) {
    pending_best_ = epochs_done;
  }
}

void RunCheckpoints::record_epoch(int epoch, const EvalStats& eval) {
  best_.add(epoch, metric_value(eval, best_by_, report_columns_));
}

bool RunCheckpoints::early_stop_due() const {
  return patience_ > 0 && best_.epochs_since_improvement(min_delta_) >= patience_;
}

void RunCheckpoints::keep_best_copies() {
  if (!pending_best_) {
    return;
  }
  writer_.wait();
  const int64_t written = *pending_best_;
  pending_best_.reset();
  // Every recorded epoch, best first: the first keep_best_ keep a copy,
  // and the copies of the rest (from this run or the one it resumed) go.
  const std::vector<int> ranked = best_.best(std::numeric_limits<int>::max());
  const auto kept = std::min(ranked.size(), static_cast<std::size_t>(keep_best_));
  if (std::find(ranked.begin(), ranked.begin() + kept, written) != ranked.begin() + kept) {
    keep_as(path_, best_checkpoint_path(path_, written));
  }
  for (std::size_t i = kept; i < ranked.size(); ++i) {
    std::error_code error;
    std::filesystem::remove(best_checkpoint_path(path_, ranked[i]), error);
  }
}

void RunCheckpoints::keep_pending_epoch() {
  if (!pending_epoch_) {
    return;
  }
  writer_.wait();
  const std::string kept = epoch_checkpoint_path(path_, *pending_epoch_);
  pending_epoch_.reset();
  keep_as(path_, kept);
}

void RunCheckpoints::finish() {
  writer_.wait();
  keep_pending_epoch();
  keep_best_copies();
}

int RunCheckpoints::stopped(int sig, int64_t epochs_done, int64_t steps_done, const Job& job) {
  finish();
  const std::string where = steps_done > 0
                                ? fmt::format("step {} of epoch {}", steps_done, epochs_done + 1)
                                : fmt::format("epoch {}", epochs_done);
  const bool requeue = sig == requeue_signal();
  if (job.rank == 0 && requeue) {
    // Before the group ends, so no rank's exit ends the job before it is requeued.
    spdlog::warn(
        "stopped by signal {} after {}: {} holds the run there; requeueing the Slurm "
        "job ({}), which resumes from it",
        sig, where, path_, slurm_job_summary());
    requeue_slurm_job();
  } else if (job.rank == 0) {
    spdlog::warn(
        "stopped by signal {} after {}: {} holds the run there; the same command with "
        "--resume continues from it",
        sig, where, path_);
  }
  // Every rank stopped by the signal, so every rank is here. None ends before
  // Slurm has answered rank 0's request: a rank's exit ends the round (dtrun,
  // srun), and would stop rank 0 in the middle of asking.
  if (requeue && job.distributed()) {
    dist::barrier();
  }
  finish_job(job);
  return 128 + sig;
}

}  // namespace dtrain::train

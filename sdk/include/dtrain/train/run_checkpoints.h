// A training run's checkpoints (--checkpoint, --checkpoint-steps,
// --resume): the file rank 0 writes at every epoch's end and, with
// --checkpoint-steps, every so many steps into an epoch; and where a
// resumed run starts, which every rank must agree on.
//
// Besides the model, the optimizer and the loss scaler, a checkpoint keeps
// the notes that describe the model (TrainerOptions::checkpoint_notes),
// the sharding's state (the split, auto's measured weights) and, written
// mid-epoch, the epoch's position (steps and loss so far over every rank).
// A run with the checkpoint's split resumes at the very step, exactly as
// an unbroken run; one with another split (a node joined or left, another
// --batch-size or --rank-weights) trains the samples of that epoch no
// process had reached, split among its own processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/train/best_epochs.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/train/epoch_stats.h"
#include "dtrain/train/job.h"
#include "dtrain/train/sharding.h"
#include "dtrain/train/trainer_options.h"

namespace dtrain::train {

class RunCheckpoints {
 public:
  // Before the job starts: on rank 0 checks that --checkpoint (options'
  // checkpoint; also keep_epoch_checkpoints and resume) can be
  // written (a bad path fails before any training), and with --resume
  // loads the checkpoint into the model, the optimizer and the scaler
  // when there is one. Nothing is kept for the references' lifetime but
  // the pointers given.
  RunCheckpoints(const TrainerOptions& options, int rank, torch::nn::Module& module,
                 torch::optim::Optimizer& optimizer, amp::GradScaler* scaler);

  // Epochs the loaded checkpoint holds whole (0: training starts afresh).
  int64_t epochs_done() const { return loaded_ ? loaded_->epochs_done : 0; }

  // Throws unless every rank resumes from the same epoch and step: a rank
  // that found no checkpoint (another node, the file not copied there)
  // would otherwise train from scratch beside the others. A collective.
  void check_same_resume_point(const Job& job) const;

  // Restores the sharding's state from the loaded checkpoint, and returns
  // where the first epoch to train starts: at the checkpoint's step with
  // its split; under another split, at the start of the rest of the epoch
  // (Sharding::continue_with), with the loss summed before.
  EpochPosition start(Sharding& sharding, const Job& job) const;

  // Rank 0 writes a checkpoint after `epochs_done` epochs and, when
  // `position` has steps, that far into the next one; other ranks return.
  // The state is taken at once and written to disk in the background
  // (CheckpointWriter), so training goes on meanwhile; a failed
  // write is thrown by the next save or by finish().
  void save(int64_t epochs_done, const EpochPosition& position, const Sharding& sharding,
            const Job& job);
  // Records an epoch's evaluation by --best-by, before its checkpoint is
  // saved (which then keeps the record); with --keep-best that checkpoint
  // is also kept as <name>.best.epoch<N><ext> while the epoch ranks among
  // the best, and the copies of epochs that fall out are removed.
  void record_epoch(int epoch, const EvalStats& eval);
  // Whether --best-by has not improved for --early-stop-patience epochs
  // (the same on every rank: each evaluated the whole test set).
  bool early_stop_due() const;
  const BestEpochs& best_epochs() const { return best_; }

  // Until the last checkpoint is on disk (before the process ends), and
  // kept under its epoch's name when it should be.
  void finish();
  // After a stop asked for by signal `sig` (GracefulStop), with the
  // checkpoint saved after `epochs_done` epochs and `steps_done` steps:
  // waits for it to be on disk, says so on rank 0, leaves the job, and
  // returns the exit code of a process ended by that signal (128 + sig), so
  // a scheduler sees a run that did not finish.
  int stopped(int sig, int64_t epochs_done, int64_t steps_done, const Job& job);

 private:
  // With --keep-epoch-checkpoints, the checkpoint at path_ (once on disk)
  // also goes under its epoch's name: Note [Each epoch's checkpoint kept].
  void keep_pending_epoch();
  // --keep-best: the best epochs' copies, once the checkpoint is on disk.
  void keep_best_copies();

  std::string path_;  // empty: no checkpoints
  bool keep_epochs_ = false;
  CheckpointNotes notes_;                 // saved in every checkpoint
  std::optional<int64_t> pending_epoch_;  // written at path_, not yet kept
  int keep_best_ = 0;
  std::string best_by_;
  std::vector<std::string> report_columns_;
  int patience_ = 0;
  double min_delta_ = 0;
  BestEpochs best_;
  std::optional<int64_t> pending_best_;  // an epoch end written at path_, to rank
  torch::nn::Module* module_;
  torch::optim::Optimizer* optimizer_;
  amp::GradScaler* scaler_;
  std::optional<TrainingProgress> loaded_;
  CheckpointWriter writer_;
};

}  // namespace dtrain::train

// How each epoch's training samples and each step's global batch are split
// among the job's processes (--rank-weights, rank_weights.h):
//
// - "equal": DistributedSampler's shards (PyTorch's, padded to a multiple
//   of the world size) and --batch-size on every process.
// - one weight per process ("3,1", known relative speeds): the epoch's
//   order cut into one slice per process in proportion to the weights
//   (ThroughputWeightedSampler: no padding, nothing dropped), and each
//   process's batch its share of the global batch (--batch-size times the
//   processes), so a slow process reads less and waits less. A last batch
//   of a single sample joins the batch before it (batch norm), and ranks
//   whose step counts differ finish the epoch inside DDP's join.
// - "auto": the first epoch as weights all 1, each later one by the compute
//   rates the processes measured in the epoch before (measure()).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/train/job.h"
#include "dtrain/train/rank_weights.h"
#include "dtrain/train/trainer_options.h"

namespace dtrain::train {

struct CommStats;   // comm_stats.h
struct EpochStats;  // epoch_stats.h

// This process's part of one epoch.
struct EpochShard {
  std::vector<int64_t> indices;  // the samples it trains, in order
  int64_t batch_size = 0;        // its samples per step
  int64_t steps = 0;             // its batches; the last may be shorter, or one longer
  // Weighted splits only: every process's samples, batch and steps, in
  // rank order (for the log, and to know who trains longest).
  std::vector<int64_t> rank_samples, rank_batches, rank_steps;

  bool weighted() const { return !rank_samples.empty(); }
  // Some processes take fewer steps than others: they finish the epoch
  // inside DDP's join, and then adopt the state of last_to_finish().
  bool steps_differ() const;
  // The highest rank among those taking the most steps: the one whose
  // parameters DDP's join hands to every rank.
  int last_to_finish() const;
};

class Sharding {
 public:
  // Throws dtrain::Error naming --rank-weights and its value when a
  // weighted split (auto: its first, equal one) leaves a process fewer
  // than 2 samples of the epoch or of the global batch: batch norm cannot
  // train on one sample. Of `options`, takes rank_weights, batch_size,
  // seed and noun (which names samples in logs: "clouds").
  Sharding(const TrainerOptions& options, int64_t dataset_size, const Job& job);

  // Not "equal": DDP must average gradients by sample count.
  bool weighted() const { return weights_.kind != RankWeights::Kind::kEqual; }
  // The split of `epoch` (from 1), the same on every run for the same
  // weights (a resumed run shards as an unbroken one).
  EpochShard shard(int epoch) const;
  // "equal": each process's samples per epoch (DistributedSampler's).
  int64_t equal_samples() const;
  // For the start of the log: "24 clouds per process per epoch, batch 8
  // per process" or how the weights split them.
  std::string summary() const;
  // "auto" only, a collective then: every rank's compute rate in the epoch
  // just trained -- its samples over its own time until its last step,
  // less the time it waited for its peers' gradients after its backward
  // (CommStats::wait_seconds) -- gathered as the next epoch's weights.
  // A split that would leave a process fewer than 2 samples of the epoch
  // or batch keeps the weights it had. Logged on rank 0.
  void measure(const EpochStats& stats, const CommStats& comm, const Job& job);
  // Logs the epoch's split on rank 0 when it is weighted.
  void log(const EpochShard& shard, int epoch, int epochs) const;

  // What a checkpoint keeps of the split: the dataset's size, the seed,
  // the world size, the batch and the weights now (auto: the last measured).
  std::map<std::string, at::Tensor> state() const;
  // The samples of `epoch` that no process has reached after `steps` of
  // its steps: each process's untrained ones, in rank order. What a
  // mid-epoch checkpoint keeps, so a run with another split can finish the
  // epoch (continue_with). Computes every process's split.
  std::vector<int64_t> untrained(int epoch, int64_t steps) const;
  // From now on, `epoch` trains only `rest` (the samples a checkpoint's
  // processes had not reached), split among this job's processes as whole
  // epochs are. False, and nothing left to train in `epoch`, when that
  // would leave a process fewer than 2 (batch norm).
  bool continue_with(int epoch, std::vector<int64_t> rest);
  // Whether a checkpoint's state (state()) was written for a dataset of
  // this size: only then can its samples be trained by this run.
  bool same_dataset(const std::map<std::string, at::Tensor>& state) const;
  // Whether `epoch` is split from such a rest rather than whole.
  bool splits_rest(int epoch) const;

  // Takes back a checkpoint's state (one written without any is taken as
  // another split): "auto" continues from the weights measured before the
  // restart when the world size is the same, and starts again from an
  // equal split otherwise (logged on rank 0). True when the checkpoint's
  // epochs were split exactly as this run splits them, so a position in
  // the middle of one carries over.
  bool restore(const std::map<std::string, at::Tensor>& state);

 private:
  // Why `weights` cannot split this job (empty: they can).
  std::string problem(const std::vector<double>& weights) const;
  // `rank`'s part of `epoch` (of its rest, after continue_with).
  EpochShard shard_of(int epoch, int rank) const;
  // `keep_every_sample`: a last batch of one sample joins the one before
  // it rather than being left out.
  EpochShard equal_shard(std::vector<int64_t> indices, bool keep_every_sample) const;
  EpochShard weighted_shard(std::vector<int64_t> indices, std::vector<int64_t> rank_samples,
                            int rank) const;
  EpochShard split_rest(const std::vector<int64_t>& rest, int rank) const;

  std::string flag_;  // --rank-weights and its value, for messages
  RankWeights weights_;
  std::vector<double> current_;  // the weighted split's weights now
  int64_t dataset_size_;
  int64_t batch_size_;  // per process; the global batch is world times it
  int64_t seed_;
  Job job_;
  std::string noun_;
  int64_t equal_samples_ = 0;  // "equal": each process's samples per epoch
  struct Rest {
    int epoch = 0;
    std::vector<int64_t> indices;
  };
  std::optional<Rest> rest_;  // continue_with's
  // untrained()'s: every process's split of one epoch, forgotten when the
  // weights or the rest change.
  mutable std::optional<std::pair<int, std::vector<EpochShard>>> every_shard_;
};

}  // namespace dtrain::train

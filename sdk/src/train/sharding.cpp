#include "dtrain/train/sharding.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/data/throughput_weighted_sampler.h"
#include "dtrain/train/comm_stats.h"
#include "dtrain/train/epoch_stats.h"
#include "dtrain/util/errors.h"

namespace dtrain::train {

namespace {

// Steps of a weighted shard: a last batch of a single sample would fail
// batch norm, so it joins the batch before it (every rank has at least 2
// samples, so there is one) and no sample is left out.
int64_t weighted_steps(int64_t samples, int64_t batch) {
  return samples / batch + (samples % batch >= 2 ? 1 : 0);
}

constexpr const char* kLayoutKey = "sharding/layout";    // samples, seed, world, batch
constexpr const char* kWeightsKey = "sharding/weights";  // weighted splits only

}  // namespace

bool EpochShard::steps_differ() const {
  return !rank_steps.empty() && *std::min_element(rank_steps.begin(), rank_steps.end()) !=
                                    *std::max_element(rank_steps.begin(), rank_steps.end());
}

int EpochShard::last_to_finish() const {
  const int64_t most = *std::max_element(rank_steps.begin(), rank_steps.end());
  for (auto r = static_cast<int>(rank_steps.size()) - 1; r > 0; --r) {
    if (rank_steps[static_cast<size_t>(r)] == most) {
      return r;
    }
  }
  return 0;
}

Sharding::Sharding(const TrainerOptions& options, int64_t dataset_size, const Job& job)
    : flag_("--rank-weights " + to_string(options.rank_weights())),
      weights_(options.rank_weights()),
      dataset_size_(dataset_size),
      batch_size_(options.batch_size()),
      seed_(static_cast<int64_t>(options.seed())),
      job_(job),
      noun_(options.noun()) {
  if (!weighted()) {
    equal_samples_ =
        data::DistributedSampler(dataset_size,
                                 data::DistributedSamplerOptions(job.world, job.rank).seed(seed_))
            .num_samples();
    return;
  }
  // The flag's parse compared the count with the launcher's world; this is
  // the process group's.
  current_ = weights_.kind == RankWeights::Kind::kFixed
                 ? weights_.fixed
                 : std::vector<double>(static_cast<size_t>(job.world), 1.0);
  DTRAIN_CHECK(static_cast<int>(current_.size()) == job.world, flag_, ": ", current_.size(),
               " weight(s) for ", job.world, " process(es); give one per process");
  const std::string why = problem(current_);
  DTRAIN_CHECK(
      why.empty(), flag_,
      weights_.kind == RankWeights::Kind::kAuto ? " (whose first epoch is split equally)" : "",
      ": ", why);
}

std::string Sharding::problem(const std::vector<double>& weights) const {
  for (const double weight : weights) {
    if (!std::isfinite(weight) || weight <= 0) {
      return fmt::format("weight {} is not positive and finite", weight);
    }
  }
  const int64_t global_batch = batch_size_ * job_.world;
  const std::vector<int64_t> samples = data::apportion(dataset_size_, weights);
  const std::vector<int64_t> batches = data::apportion(global_batch, weights);
  for (size_t r = 0; r < weights.size(); ++r) {
    if (samples[r] < 2 || batches[r] < 2) {
      return fmt::format(
          "process {} would get {} of the {} training {} per epoch and {} of each global batch of "
          "{} (--batch-size {} times {} process(es)); each needs at least 2 of both, since batch "
          "norm cannot train on one sample (use more even weights, a larger --batch-size or more "
          "data)",
          r, samples[r], dataset_size_, noun_, batches[r], global_batch, batch_size_, job_.world);
    }
  }
  return "";
}

EpochShard Sharding::shard(int epoch) const {
  return shard_of(epoch, job_.rank);
}

EpochShard Sharding::shard_of(int epoch, int rank) const {
  if (rest_ && rest_->epoch == epoch) {
    return split_rest(rest_->indices, rank);
  }
  if (!weighted()) {
    data::DistributedSampler sampler(dataset_size_,
                                     data::DistributedSamplerOptions(job_.world, rank).seed(seed_));
    sampler.set_epoch(epoch - 1);
    return equal_shard(sampler.indices(), /*keep_every_sample=*/false);
  }
  data::ThroughputWeightedSampler sampler(
      dataset_size_, current_, data::ThroughputWeightedSamplerOptions().rank(rank).seed(seed_));
  sampler.set_epoch(epoch - 1);
  return weighted_shard(sampler.indices(), sampler.shares(), rank);
}

EpochShard Sharding::equal_shard(std::vector<int64_t> indices, bool keep_every_sample) const {
  EpochShard shard;
  shard.indices = std::move(indices);
  shard.batch_size = batch_size_;
  const auto n = static_cast<int64_t>(shard.indices.size());
  if (keep_every_sample) {
    // A last batch of a single sample joins the batch before it, as in
    // weighted splits: nothing is left out.
    shard.steps = weighted_steps(n, batch_size_);
    return shard;
  }
  // A last batch of one sample is left out: batch norm cannot train on
  // a single sample (LibTorch raises). Every rank has the same number of
  // samples, so every rank leaves it out and the ranks stay in step.
  if (n > 1 && n % batch_size_ == 1) {
    shard.indices.pop_back();
  }
  shard.steps = (static_cast<int64_t>(shard.indices.size()) + batch_size_ - 1) / batch_size_;
  return shard;
}

EpochShard Sharding::weighted_shard(std::vector<int64_t> indices, std::vector<int64_t> rank_samples,
                                    int rank) const {
  EpochShard shard;
  shard.indices = std::move(indices);
  shard.rank_samples = std::move(rank_samples);
  shard.rank_batches = data::apportion(batch_size_ * job_.world, current_);
  for (size_t r = 0; r < current_.size(); ++r) {
    shard.rank_steps.push_back(weighted_steps(shard.rank_samples[r], shard.rank_batches[r]));
  }
  shard.batch_size = shard.rank_batches[static_cast<size_t>(rank)];
  shard.steps = shard.rank_steps[static_cast<size_t>(rank)];
  return shard;
}

// As whole epochs are split: interleaved and padded to a multiple of the
// world size (DistributedSampler's way), or cut into slices by the weights;
// but no sample is left out (an epoch's rest is trained whole).
EpochShard Sharding::split_rest(const std::vector<int64_t>& rest, int rank) const {
  const auto n = static_cast<int64_t>(rest.size());
  if (!weighted()) {
    std::vector<int64_t> indices;
    const int64_t padded = n == 0 ? 0 : (n + job_.world - 1) / job_.world * job_.world;
    for (int64_t i = rank; i < padded; i += job_.world) {
      indices.push_back(rest[static_cast<size_t>(i % n)]);
    }
    return equal_shard(std::move(indices), /*keep_every_sample=*/true);
  }
  const std::vector<int64_t> shares = data::apportion(n, current_);
  int64_t begin = 0;
  for (int r = 0; r < rank; ++r) {
    begin += shares[static_cast<size_t>(r)];
  }
  return weighted_shard(
      std::vector<int64_t>(rest.begin() + begin,
                           rest.begin() + begin + shares[static_cast<size_t>(rank)]),
      shares, rank);
}

std::vector<int64_t> Sharding::untrained(int epoch, int64_t steps) const {
  // Every process's split, made once per epoch (a permutation of the whole
  // dataset each), however many checkpoints the epoch has.
  if (!every_shard_ || every_shard_->first != epoch) {
    std::vector<EpochShard> shards;
    for (int r = 0; r < job_.world; ++r) {
      shards.push_back(shard_of(epoch, r));
    }
    every_shard_.emplace(epoch, std::move(shards));
  }
  std::vector<int64_t> rest;
  for (const EpochShard& shard : every_shard_->second) {
    const auto done =
        std::min(steps * shard.batch_size, static_cast<int64_t>(shard.indices.size()));
    rest.insert(rest.end(), shard.indices.begin() + done, shard.indices.end());
  }
  return rest;
}

bool Sharding::same_dataset(const std::map<std::string, at::Tensor>& state) const {
  const auto layout = state.find(kLayoutKey);
  return layout != state.end() && layout->second.numel() == 4 &&
         layout->second.to(at::kLong)[0].item<int64_t>() == dataset_size_;
}

bool Sharding::splits_rest(int epoch) const {
  return rest_ && rest_->epoch == epoch;
}

bool Sharding::continue_with(int epoch, std::vector<int64_t> rest) {
  const size_t left = rest.size();
  rest_ = Rest{.epoch = epoch, .indices = std::move(rest)};
  every_shard_.reset();  // the epoch's splits are the rest's now
  bool enough = true;
  for (int r = 0; r < job_.world && enough; ++r) {
    enough = shard_of(epoch, r).indices.size() >= 2;
  }
  if (!enough) {
    rest_->indices.clear();  // too few for batch norm on every process
  }
  if (job_.rank == 0 && enough) {
    spdlog::info(
        "epoch {}: training the {} {} not reached before the restart, split among {} "
        "process(es)",
        epoch, left, noun_, job_.world);
  } else if (job_.rank == 0) {
    spdlog::info(
        "epoch {}: {} {} were not reached before the restart, too few to split among {} "
        "process(es) (batch norm needs 2 each); the epoch ends",
        epoch, left, noun_, job_.world);
  }
  return enough;
}

int64_t Sharding::equal_samples() const {
  return equal_samples_;
}

std::string Sharding::summary() const {
  if (!weighted()) {
    return fmt::format("{} {} per process per epoch, batch {} per process", equal_samples_, noun_,
                       batch_size_);
  }
  return fmt::format("{} and the global batch of {} split among processes by {}", noun_,
                     batch_size_ * job_.world, flag_);
}

void Sharding::log(const EpochShard& shard, int epoch, int epochs) const {
  if (!shard.weighted() || job_.rank != 0) {
    return;
  }
  spdlog::info("epoch {}/{}: {} per process this epoch: {}; batches {}{}", epoch, epochs, noun_,
               fmt::join(shard.rank_samples, ", "), fmt::join(shard.rank_batches, ", "),
               shard.steps_differ()
                   ? fmt::format("; steps {} (the shorter finish inside DDP's join)",
                                 fmt::join(shard.rank_steps, ", "))
                   : "");
}

void Sharding::measure(const EpochStats& stats, const CommStats& comm, const Job& job) {
  if (weights_.kind != RankWeights::Kind::kAuto) {
    return;
  }
  // Waiting for a slower peer's gradients is not this process's work; its
  // time before its last step ended (not the join after it) is.
  const double own = stats.loop_seconds - comm.wait_seconds;
  const double rate =
      static_cast<double>(stats.rank_samples) / (own > 0 ? own : stats.loop_seconds);
  // Every rank gets the same numbers, so every rank splits alike.
  const std::vector<double> rates = job.each(rate);
  const std::string why = problem(rates);
  if (job.rank == 0) {
    spdlog::info("--rank-weights auto: measured {:.1f} {}/s of compute per process{}",
                 fmt::join(rates, ", "), noun_,
                 why.empty() ? "; the next epoch is split by them"
                             : "; the next epoch keeps the last split: " + why);
  }
  if (why.empty()) {
    current_ = rates;
    every_shard_.reset();
  }
}

std::map<std::string, at::Tensor> Sharding::state() const {
  std::map<std::string, at::Tensor> state{
      {kLayoutKey, at::tensor({dataset_size_, seed_, static_cast<int64_t>(job_.world), batch_size_},
                              at::kLong)}};
  if (weighted()) {
    state[kWeightsKey] = at::tensor(current_, at::kDouble);
  }
  return state;
}

bool Sharding::restore(const std::map<std::string, at::Tensor>& state) {
  const auto layout = state.find(kLayoutKey);
  const auto weights = state.find(kWeightsKey);
  if (layout == state.end() || layout->second.numel() != 4) {
    return false;
  }
  const at::Tensor saved = layout->second.to(at::kLong);
  const bool same_world = saved[2].item<int64_t>() == job_.world;
  const bool same_layout = same_world && saved[0].item<int64_t>() == dataset_size_ &&
                           saved[1].item<int64_t>() == seed_ &&
                           saved[3].item<int64_t>() == batch_size_;
  std::vector<double> saved_weights;
  if (weights != state.end()) {
    const at::Tensor values = weights->second.to(at::kDouble).contiguous();
    saved_weights.assign(values.data_ptr<double>(), values.data_ptr<double>() + values.numel());
  }
  if (weights_.kind == RankWeights::Kind::kAuto) {
    const bool usable = same_world && static_cast<int>(saved_weights.size()) == job_.world &&
                        problem(saved_weights).empty();
    if (job_.rank == 0) {
      spdlog::info("{}: {}", flag_,
                   usable ? fmt::format("continuing from the weights measured before the restart, "
                                        "{:.1f}",
                                        fmt::join(saved_weights, ", "))
                          : "the checkpoint holds no weights measured for this many processes; "
                            "starting again from an equal split");
    }
    if (usable) {
      current_ = saved_weights;
      every_shard_.reset();
    }
  }
  return same_layout && saved_weights == (weighted() ? current_ : std::vector<double>{});
}

}  // namespace dtrain::train

// ThroughputWeightedSampler: one epoch's permutation split among ranks in
// proportion to their weights, for jobs on mixed hardware where a fast GPU
// should read more of each epoch than a slow one.
//
//   // Every rank measured its own samples/s; all_gather makes them agree.
//   auto sampler = ThroughputWeightedSampler::from_throughput(
//       dataset.size(), measured_samples_per_second, ThroughputWeightedSamplerOptions().seed(7));
//   int64_t batch = sampler.share_of(global_batch);   // this rank's batch size
//   sampler.set_epoch(epoch);
//   for (int64_t i : sampler.indices()) { ... }
//
// The epoch's order is data::epoch_order(size, seed, epoch, shuffle), the
// same permutation DistributedSampler shards. Rank r reads a contiguous
// slice of it: the slices of all ranks partition the dataset (no padding,
// nothing dropped), and slice r holds size * w_r / sum(w) indices rounded
// by cumulative rounding (every share within one of its exact value).
// The split depends only on the arguments, so ranks given the same weights
// compute the same split; from_throughput makes sure they are given the
// same weights. With DDP, give each rank a batch size in the same
// proportion (share_of) and weight gradients by sample count, so every rank
// takes about the same number of steps per epoch.
//
// Construction throws dtrain::Error for an empty dataset, no weights, a
// weight that is not positive and finite, or a rank outside the weights.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/arg.h>

#include "dtrain/dist/process_group.h"

namespace dtrain::data {

struct ThroughputWeightedSamplerOptions {
  // Rank from the default process group (dtrain::dist).
  TORCH_ARG(std::optional<int64_t>, rank);
  TORCH_ARG(bool, shuffle) = true;
  TORCH_ARG(int64_t, seed) = 0;
};

class ThroughputWeightedSampler {
 public:
  // weights[r]: rank r's relative speed, e.g. its measured samples/s.
  ThroughputWeightedSampler(int64_t dataset_size, std::vector<double> weights,
                            ThroughputWeightedSamplerOptions options = {});

  // Collective: every rank of `group` (nullptr: the default group) passes
  // its own measured throughput; the weights are their all_gather, so all
  // ranks split identically. The rank is the group's.
  static ThroughputWeightedSampler from_throughput(int64_t dataset_size,
                                                   double local_samples_per_second,
                                                   ThroughputWeightedSamplerOptions options = {},
                                                   const dist::ProcessGroupPtr& group = nullptr);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  // This rank's indices for the current epoch: num_samples() of them.
  std::vector<int64_t> indices() const;

  // Indices per rank (sum: dataset_size()), and this rank's.
  const std::vector<int64_t>& shares() const { return shares_; }
  int64_t num_samples() const { return shares_[static_cast<std::size_t>(rank_)]; }
  // Where this rank's slice starts in the epoch's order.
  int64_t offset() const { return offset_; }
  // This rank's part of `total` split by the same weights and rounding,
  // e.g. its batch size out of a global batch.
  int64_t share_of(int64_t total) const;

  int64_t dataset_size() const { return dataset_size_; }
  int64_t rank() const { return rank_; }
  const std::vector<double>& weights() const { return weights_; }

 private:
  int64_t dataset_size_;
  std::vector<double> weights_;
  ThroughputWeightedSamplerOptions options_;
  int64_t rank_;
  std::vector<int64_t> shares_;
  int64_t offset_ = 0;
  int64_t epoch_ = 0;
};

// Splits `total` into weights.size() non-negative parts summing to `total`,
// part r close to total * w_r / sum(w): boundary r is the rounded
// cumulative quota, so each part is within one of its exact value.
// Throws dtrain::Error for total < 0, no weights, or a weight that is not
// positive and finite.
std::vector<int64_t> apportion(int64_t total, const std::vector<double>& weights);

}  // namespace dtrain::data

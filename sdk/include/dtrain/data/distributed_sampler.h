// DistributedSampler: which dataset indices each rank reads in an epoch,
// with torch.utils.data.DistributedSampler's exact index lists.
//
//   DistributedSampler sampler(dataset.size(), DistributedSamplerOptions(world, rank).seed(42));
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     sampler.set_epoch(epoch);
//     for (int64_t i : sampler.indices()) { ... }
//   }
//
// The same arguments give the same lists as PyTorch from the same wheel
// (tests/python/test_distributed_sampler.py checks it):
//  - shuffle: the epoch's order is randperm(dataset_size) drawn from a CPU
//    generator seeded with seed + epoch (ATen's own op, so bit-identical);
//    otherwise 0, 1, ..., dataset_size - 1.
//  - without drop_last, the order is padded to a multiple of num_replicas
//    by repeating it from its start (as many times as needed when the
//    padding is longer than the dataset); with drop_last, its tail is cut
//    to the largest multiple of num_replicas (possibly to nothing).
//  - rank r takes every num_replicas-th index, starting at r.
//
// Every rank must use the same dataset size, seed, epoch, shuffle and
// drop_last, or the shards overlap. Construction throws dtrain::Error for
// an empty dataset, num_replicas < 1 or a rank outside [0, num_replicas).
// Cheap to copy; not thread-safe (set_epoch mutates).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/arg.h>

#include "dtrain/dist/process_group.h"

namespace dtrain::data {

struct DistributedSamplerOptions {
  // World size and rank from the default process group (dtrain::dist).
  DistributedSamplerOptions() = default;
  DistributedSamplerOptions(int64_t num_replicas, int64_t rank)
      : num_replicas_(num_replicas), rank_(rank) {}

  TORCH_ARG(std::optional<int64_t>, num_replicas);
  TORCH_ARG(std::optional<int64_t>, rank);
  TORCH_ARG(bool, shuffle) = true;
  TORCH_ARG(int64_t, seed) = 0;
  TORCH_ARG(bool, drop_last) = false;
};

class DistributedSampler {
 public:
  // A missing num_replicas or rank is read from the default process group
  // (dtrain::Error when none was initialised).
  explicit DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});

  // Selects the epoch's shuffle; call it before every epoch, on every rank.
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  // This rank's indices for the current epoch: num_samples() of them.
  std::vector<int64_t> indices() const;

  // Collective over `group` (nullptr: the default group): throws
  // dtrain::Error on every rank, naming the ranks and values, unless all
  // samplers have the same dataset size, seed, epoch, shuffle, drop_last
  // and num_replicas (the group's size) and their ranks are 0 .. size-1
  // once each -- the mistakes that silently give overlapping shards.
  void check_agreement(const dist::ProcessGroupPtr& group = nullptr) const;

  // Indices per rank: ceil(size / replicas), or floor with drop_last.
  int64_t num_samples() const { return num_samples_; }
  // num_samples() * num_replicas(): the padded (or cut) epoch length.
  int64_t total_size() const { return num_samples_ * num_replicas_; }

  int64_t dataset_size() const { return dataset_size_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int64_t num_replicas_;
  int64_t rank_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

// The epoch's order of all dataset indices, before padding and sharding:
// randperm(dataset_size) from a CPU generator seeded with seed + epoch
// (wrapping to uint64 as torch.Generator.manual_seed does with negative
// seeds) when shuffle, else the identity. Every sampler of dtrain::data
// shards this order, so they agree on one epoch's permutation.
std::vector<int64_t> epoch_order(int64_t dataset_size, int64_t seed, int64_t epoch, bool shuffle);

}  // namespace dtrain::data

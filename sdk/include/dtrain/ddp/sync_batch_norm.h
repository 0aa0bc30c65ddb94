// SyncBatchNorm: batch normalisation over the global batch of a process
// group, for data-parallel training with small per-rank batches.
//
//   auto bn = dtrain::ddp::SyncBatchNorm(dtrain::ddp::SyncBatchNormOptions(64).momentum(0.01));
//   auto y = bn(x);  // x: (N, C, *) on this rank; statistics over every rank's N
//
// Training mode: each channel's mean and variance are those of the
// concatenated batches of all ranks (an all_reduce of per-rank sums, sums
// of squares and counts), and backward all-reduces the two per-channel
// sums the input gradient needs, so the input gradients equal those of a
// BatchNorm applied to the global batch. Ranks may hold batches of
// different sizes (even empty ones). The gradients of weight and bias are
// this rank's part only; summing them over ranks (as DDP's gradient
// all-reduce does, up to its averaging) gives the global batch's.
// Running statistics are updated on every rank with the global mean and
// unbiased variance, so they stay identical across ranks. Eval mode uses
// the running statistics and communicates nothing.
//
// Without a process group of more than one rank (no init_process_group,
// or a world of one) it is a plain BatchNorm. Every rank of the group must
// call forward, and backward, the same number of times in the same order:
// both are collectives. forward throws dtrain::Error for an input with
// fewer than 2 dimensions or the wrong number of channels, and in training
// when the whole group holds a single value per channel, or when the ranks'
// inputs have different channel counts (on every rank, naming each rank's
// count: a training forward all-gathers the count, 8 bytes a rank, before
// the statistics' all_reduce, whose size depends on it).
//
// Parameter and buffer names (weight, bias, running_mean, running_var,
// num_batches_tracked) are BatchNorm's, so state dicts load across both.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "dtrain/dist/process_group.h"

namespace dtrain::ddp {

struct SyncBatchNormOptions {
  /* implicit */ SyncBatchNormOptions(int64_t num_features) : num_features_(num_features) {}

  // C of an (N, C, *) input.
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  // Weight of the new batch in the running statistics; nullopt: a
  // cumulative average over all batches seen (as torch.nn.BatchNorm).
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(bool, affine) = true;
  TORCH_ARG(bool, track_running_stats) = true;
  // The ranks that share statistics; nullptr: the default group, when one
  // is initialised at forward time.
  TORCH_ARG(dist::ProcessGroupPtr, process_group) = nullptr;
};

class SyncBatchNormImpl : public torch::nn::Cloneable<SyncBatchNormImpl> {
 public:
  explicit SyncBatchNormImpl(SyncBatchNormOptions options);

  // Takes over existing tensors as its parameters and buffers instead of
  // creating new ones (convert_sync_batchnorm uses it so an optimizer that
  // already holds a BatchNorm's parameters keeps working). Undefined
  // tensors are fine where the options say there are none.
  struct Adopted {
    at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  };
  SyncBatchNormImpl(SyncBatchNormOptions options, Adopted adopted);

  void reset() override;
  void reset_running_stats();
  void reset_parameters();

  at::Tensor forward(const at::Tensor& input);

  void pretty_print(std::ostream& stream) const override;

  SyncBatchNormOptions options;
  at::Tensor weight;
  at::Tensor bias;
  at::Tensor running_mean;
  at::Tensor running_var;
  at::Tensor num_batches_tracked;

 private:
  // The group forward synchronises over, or nullptr for none.
  dist::ProcessGroupPtr group() const;

  std::optional<Adopted> adopted_;
};

TORCH_MODULE(SyncBatchNorm);

// Replaces, in place, every torch::nn::BatchNorm1d/2d/3d inside a
// torch::nn::Sequential anywhere in `module`'s tree (including `module`
// itself) by a SyncBatchNorm over `group` that shares the BatchNorm's
// parameter and buffer tensors (so its values, training mode and an
// optimizer built on them carry over). Returns the number replaced.
//
// A BatchNorm held directly by any other module cannot be replaced: a C++
// module's forward calls its children through its own member fields,
// which no outside code can repoint. Such a tree raises dtrain::Error
// naming the BatchNorm's path before anything is changed; declare a
// SyncBatchNorm in that module instead.
int convert_sync_batchnorm(const std::shared_ptr<torch::nn::Module>& module,
                           const dist::ProcessGroupPtr& group = nullptr);

template <typename ModuleType>
int convert_sync_batchnorm(const torch::nn::ModuleHolder<ModuleType>& module,
                           const dist::ProcessGroupPtr& group = nullptr) {
  return convert_sync_batchnorm(module.ptr(), group);
}

}  // namespace dtrain::ddp

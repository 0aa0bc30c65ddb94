// The autograd function behind SyncBatchNorm's training-mode forward (an
// internal header: users go through dtrain/ddp/sync_batch_norm.h).
#pragma once

#include <ATen/core/Tensor.h>

#include "dtrain/dist/process_group.h"

namespace dtrain::ddp::detail {

// Normalises `input` (N, C, *) with the mean and biased variance of every
// rank's input over `group`, then scales by weight and shifts by bias
// (either may be undefined). Updates running_mean/running_var in place
// with `momentum` when they are defined. Differentiable in input, weight
// and bias; backward all-reduces over the same group.
at::Tensor sync_batch_norm(const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bias, const at::Tensor& running_mean,
                           const at::Tensor& running_var, double eps, double momentum,
                           const dist::ProcessGroupPtr& group);

}  // namespace dtrain::ddp::detail

// Parameters a backward pass will not reach (find_unused_parameters, as in
// PyTorch's DDP), and what to tell a user whose parameters got no gradient:
// pure functions over the autograd graph and the reducer's bookkeeping,
// which the reducer calls.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

namespace dtrain::ddp::detail {

// The indices of `accumulators` (each parameter's AccumulateGrad node) that
// no path from `outputs` through the autograd graph reaches.
std::vector<std::size_t> unreached_accumulators(
    const std::vector<at::Tensor>& outputs,
    const std::vector<std::shared_ptr<torch::autograd::Node>>& accumulators);

// "rank 1: 2 parameter(s) received no gradient in this backward pass: 'a',
// 'b'. If they are not used in forward, ...": the first 8 names of the
// parameters not `ready`.
std::string missing_gradients_message(int rank, const std::vector<std::string>& names,
                                      const std::vector<bool>& ready);

}  // namespace dtrain::ddp::detail

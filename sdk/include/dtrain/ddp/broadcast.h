// Broadcasting model and optimizer state from one rank, and checking that
// every rank holds the same parameter shapes. DistributedDataParallel uses
// these at construction; Horovod-style programs call them directly:
//
//   dtrain::ddp::broadcast_parameters(*model, /*root=*/0);
//   dtrain::ddp::broadcast_optimizer_state(optimizer, /*root=*/0);
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/dist/process_group.h"

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace dtrain::ddp {

// Copies root's values into `tensors` on every rank, one broadcast per
// dtype (the tensors of one dtype travel flattened in a single buffer).
// `group` nullptr means the default group.
void broadcast_tensors(const std::vector<at::Tensor>& tensors, int root = 0,
                       const dist::ProcessGroupPtr& group = nullptr);

// All parameters and buffers of `module` (Horovod's broadcast_parameters).
void broadcast_parameters(const torch::nn::Module& module, int root = 0,
                          const dist::ProcessGroupPtr& group = nullptr);

// The optimizer's hyper-parameters and per-parameter state (momentum,
// Adam's moments and step counts), serialized on root and loaded on every
// other rank. Every rank must hold an optimizer of the same type over
// parameters of the same shapes: every rank first checks that the ranks
// agree on the optimizer's type, its number of parameter groups and the
// number, shapes and dtypes of each group's parameters, and all raise the
// same dtrain::Error naming the first difference and the rank that has it
// when they do not. Afterwards every rank's state equals root's: entries
// root lacks (root fresh, this rank already stepped) are dropped.
void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root = 0,
                               const dist::ProcessGroupPtr& group = nullptr);

// Throws dtrain::Error on every rank when the ranks disagree on the number,
// shapes or dtypes of `tensors`, naming the first differing tensor (by
// names[i]) and what each side holds. A collective: every rank must call it.
void verify_same_shapes(const std::vector<std::string>& names,
                        const std::vector<at::Tensor>& tensors,
                        const dist::ProcessGroupPtr& group = nullptr);

// verify_same_shapes for parameters, where the ranks must also agree on
// which of them require grad; `context` (e.g. "DistributedOptimizer")
// starts the message. A collective: every rank must call it.
void verify_same_parameters(const std::string& context, const std::vector<std::string>& names,
                            const std::vector<at::Tensor>& parameters,
                            const dist::ProcessGroupPtr& group = nullptr);

}  // namespace dtrain::ddp

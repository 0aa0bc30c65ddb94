// convert_sync_batchnorm: BatchNorm -> SyncBatchNorm inside Sequentials.
//
// Note [Replacing modules in C++]
// Python's convert_sync_batchnorm rebinds attributes, and a module's
// forward finds its children through those attributes. A C++ module's
// forward calls members such as `torch::nn::BatchNorm2d bn_`; replacing
// the registered child (Module::replace_module) changes what parameters()
// and named_children() report but not that member, so forward would keep
// using the old BatchNorm while the optimizer trained the new one. The
// one container whose forward reads its children from a slot we can
// rewrite is torch::nn::Sequential (its AnyModule list, reachable through
// begin()). So conversion rewrites Sequential slots in place -- which also
// reaches a Sequential held as a member of a custom module, since the
// member and the tree share the same SequentialImpl -- and refuses a tree
// holding a BatchNorm anywhere else, before changing anything.
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

#include <optional>
#include <string>
#include <vector>

#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/util/errors.h"

namespace dtrain::ddp {
namespace {

struct BatchNormState {
  SyncBatchNormOptions options;
  SyncBatchNormImpl::Adopted tensors;
  bool training;
};

template <typename Impl>
std::optional<BatchNormState> state_as(const std::shared_ptr<torch::nn::Module>& module) {
  const auto bn = std::dynamic_pointer_cast<Impl>(module);
  if (!bn) {
    return std::nullopt;
  }
  const auto& o = bn->options;
  return BatchNormState{
      SyncBatchNormOptions(o.num_features())
          .eps(o.eps())
          .momentum(o.momentum())
          .affine(o.affine())
          .track_running_stats(o.track_running_stats()),
      {bn->weight, bn->bias, bn->running_mean, bn->running_var, bn->num_batches_tracked},
      bn->is_training()};
}

// The state of a BatchNorm1d/2d/3d, or nullopt for any other module.
std::optional<BatchNormState> batch_norm_state(const std::shared_ptr<torch::nn::Module>& module) {
  if (auto s = state_as<torch::nn::BatchNorm1dImpl>(module)) {
    return s;
  }
  if (auto s = state_as<torch::nn::BatchNorm2dImpl>(module)) {
    return s;
  }
  return state_as<torch::nn::BatchNorm3dImpl>(module);
}

std::string join(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

// Paths of the BatchNorms conversion cannot reach (see the Note).
void find_unreachable(const std::shared_ptr<torch::nn::Module>& module, const std::string& path,
                      std::vector<std::string>& found) {
  const bool sequential = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(module) != nullptr;
  for (const auto& child : module->named_children()) {
    const std::string child_path = join(path, child.key());
    if (batch_norm_state(child.value())) {
      if (!sequential) {
        found.push_back(child_path);
      }
    } else {
      find_unreachable(child.value(), child_path, found);
    }
  }
}

int convert(const std::shared_ptr<torch::nn::Module>& module, const dist::ProcessGroupPtr& group) {
  int converted = 0;
  if (const auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(module)) {
    const auto names = seq->named_children().keys();
    DTRAIN_INTERNAL_ASSERT(names.size() == seq->size(), "a Sequential with ", seq->size(),
                           " modules registers ", names.size(), " children");
    for (std::size_t i = 0; i < seq->size(); ++i) {
      if (auto state = batch_norm_state(seq->ptr(i))) {
        SyncBatchNorm sync(state->options.process_group(group), std::move(state->tensors));
        sync->train(state->training);
        seq->begin()[static_cast<std::ptrdiff_t>(i)] = torch::nn::AnyModule(sync);
        seq->replace_module(names[i], sync);
        ++converted;
      }
    }
  }
  for (const auto& child : module->children()) {
    if (!std::dynamic_pointer_cast<SyncBatchNormImpl>(child)) {
      converted += convert(child, group);
    }
  }
  return converted;
}

}  // namespace

int convert_sync_batchnorm(const std::shared_ptr<torch::nn::Module>& module,
                           const dist::ProcessGroupPtr& group) {
  DTRAIN_CHECK(module != nullptr, "convert_sync_batchnorm: module is null");
  DTRAIN_CHECK(!batch_norm_state(module),
               "convert_sync_batchnorm: the module is itself a BatchNorm, which cannot be "
               "replaced in place; construct a dtrain::ddp::SyncBatchNorm instead");
  std::vector<std::string> unreachable;
  find_unreachable(module, "", unreachable);
  if (!unreachable.empty()) {
    std::string list;
    for (const auto& path : unreachable) {
      list += (list.empty() ? "'" : ", '") + path + "'";
    }
    DTRAIN_CHECK(false, "convert_sync_batchnorm: cannot replace the BatchNorm at ", list,
                 ": only children of a torch::nn::Sequential can be replaced, because other "
                 "modules call their children through member fields; use "
                 "dtrain::ddp::SyncBatchNorm in that module instead (nothing was converted)");
  }
  return convert(module, group);
}

}  // namespace dtrain::ddp

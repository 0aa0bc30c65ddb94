// The model as a training job runs it: alone, the module itself; with
// several processes, DistributedDataParallel around it (rank 0's weights
// win), recording when each bucket's all-reduce ran so the report can say
// how long communication took and how much of it backward hid. A Trainer's
// step and evaluation callbacks are given it:
//
//   [](JobModel<Net>& model, const Batch& batch) {         // a training step
//     return F::cross_entropy(model.train(batch[0]), batch[1]);
//   }
//   model.eval(points)                                      // in evaluation
//
// The module is a LibTorch module holder (TORCH_MODULE); `train` and `eval`
// take whatever its forward takes.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/train/comm_stats.h"
#include "dtrain/train/job.h"
#include "dtrain/train/train_epoch.h"

namespace dtrain::train {

template <typename ModuleHolder>
class JobModel {
 public:
  // DDP takes `options` (TrainerOptions::ddp), recording its timeline;
  // `sample_count`: ranks train batches of different sizes (--rank-weights),
  // so DDP weights each rank's gradient by its samples to get the global
  // batch's gradient.
  JobModel(ModuleHolder model, const Job& job, bool sample_count = false,
           ddp::DdpOptions options = {})
      : model_(std::move(model)) {
    if (job.distributed()) {
      options.record_timeline = true;
      if (sample_count) {
        options.averaging = ddp::GradientAveraging::kSampleCount;
      }
      ddp_.emplace(model_, options);
    }
  }

  // The module alone, in any job: for evaluation only (no DDP, whose
  // construction would broadcast rank 0's parameters and whose forward
  // would expect a backward).
  static JobModel for_evaluation(ModuleHolder model) { return JobModel(std::move(model)); }

  // A training forward: through DDP in a job (its gradients all-reduced).
  template <typename... Args>
  at::Tensor train(const Args&... args) {
    return ddp_ ? (*ddp_)(args...) : model_(args...);
  }
  // An evaluation forward: the module alone.
  template <typename... Args>
  at::Tensor eval(const Args&... args) {
    return model_(args...);
  }
  ModuleHolder& module() { return model_; }

  // Runs an epoch's steps inside DDP's join, where ranks that run out of
  // steps answer the others' collectives until all are done (directly
  // alone). For train_epoch.
  Join join() {
    return [this](const std::function<void()>& steps) { ddp_ ? ddp_->join(steps) : steps(); };
  }

  // Runs a forward and backward whose gradients DDP keeps local, summed
  // into the next synchronised backward's (gradient accumulation; directly
  // alone). For train_epoch.
  NoSync no_sync() {
    return [this](const std::function<void()>& forward_backward) {
      if (ddp_) {
        auto guard = ddp_->no_sync();
        forward_backward();
      } else {
        forward_backward();
      }
    };
  }

  // The communication of the steps since the last call (zeros alone).
  CommStats take_comm_stats() {
    return ddp_ ? train::take_comm_stats(ddp_->timeline()) : CommStats{};
  }
  // DDP's record of those steps: each backward and bucket (none alone).
  std::vector<ddp::StepEvents> timeline_steps() {
    return ddp_ ? ddp_->timeline().steps() : std::vector<ddp::StepEvents>{};
  }

 private:
  explicit JobModel(ModuleHolder model) : model_(std::move(model)) {}

  ModuleHolder model_;
  std::optional<ddp::DistributedDataParallel<ModuleHolder>> ddp_;
};

}  // namespace dtrain::train

// The model as a training app runs it in its job: alone, the module
// itself; with several processes, DistributedDataParallel around it (rank
// 0's weights win), recording when each bucket's all-reduce ran so the
// report can say how long communication took and how much of it backward
// hid.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include <ATen/core/Tensor.h>

#include "classification_loop.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "training_job.h"

namespace dtrain::apps {

// The job's communication over some steps.
struct CommStats {
  double seconds = 0;          // every bucket's all-reduce, launch to finish, summed
  double hidden_fraction = 0;  // the share of it that overlapped backward
  // Wall time from the end of each backward until its last all-reduce
  // finished, summed: the time this rank waited for its peers' gradients
  // (and the part of the transfer backward did not hide). Not seconds times
  // (1 - hidden_fraction): buckets in flight at once would count twice.
  double wait_seconds = 0;
};

template <typename ModuleHolder>
class JobModel {
 public:
  // `sample_count`: ranks train batches of different sizes (--rank-weights),
  // so DDP weights each rank's gradient by its samples to get the global
  // batch's gradient.
  JobModel(ModuleHolder model, const Job& job, bool sample_count = false)
      : model_(std::move(model)) {
    if (job.distributed()) {
      ddp::DdpOptions options;
      options.record_timeline = true;
      if (sample_count) {
        options.averaging = ddp::GradientAveraging::kSampleCount;
      }
      ddp_.emplace(model_, options);
    }
  }

  // Training steps go through DDP in a job; evaluation runs the module
  // alone. Any arguments the module's forward takes.
  template <typename... Args>
  at::Tensor train(const Args&... args) {
    return ddp_ ? (*ddp_)(args...) : model_(args...);
  }
  template <typename... Args>
  at::Tensor eval(const Args&... args) {
    return model_(args...);
  }

  // The same for a forward of one tensor, as the classification loop takes it.
  Forward train_forward() {
    return [this](const at::Tensor& x) { return train(x); };
  }
  Forward eval_forward() {
    return [this](const at::Tensor& x) { return eval(x); };
  }

  // Runs an epoch's steps inside DDP's join, where ranks that run out of
  // steps answer the others' collectives until all are done (directly
  // alone). For train_epoch.
  Join join() {
    return [this](const std::function<void()>& steps) { ddp_ ? ddp_->join(steps) : steps(); };
  }

  // The communication of the steps since the last call (zeros alone).
  CommStats take_comm_stats() {
    if (!ddp_) {
      return {};
    }
    ddp::Timeline& timeline = ddp_->timeline();
    CommStats stats{timeline.communication_seconds(), timeline.hidden_fraction()};
    for (const ddp::StepEvents& step : timeline.steps()) {
      ddp::TimePoint last = step.backward_end;
      for (const ddp::BucketEvent& bucket : step.buckets) {
        last = std::max(last, bucket.end);
      }
      stats.wait_seconds += std::chrono::duration<double>(last - step.backward_end).count();
    }
    timeline.clear();
    return stats;
  }

 private:
  ModuleHolder model_;
  std::optional<ddp::DistributedDataParallel<ModuleHolder>> ddp_;
};

}  // namespace dtrain::apps

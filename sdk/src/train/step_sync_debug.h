// Note [A step without host syncs]
// A GPU stays busy only while the host queues work ahead of it; an
// operation that makes the host wait for the GPU inside a training step
// (reading a value, a blocking copy) drains that queue every step. With
// DTRAIN_CUDA_SYNC_DEBUG=error (or warn), each step on a GPU runs under
// CUDA's synchronisation debug mode (c10::cuda::SyncDebugMode; Python's
// torch.cuda.set_sync_debug_mode): such an operation then fails (or warns),
// and the step's error names its phase. The GPU checks run the main job so
// (tests/gpu/run_gpu_checks.sh, main_job_cuda_sync_free).
#pragma once

#include <exception>
#include <string>

#include <c10/core/Device.h>

namespace dtrain::train::detail {

class StepSyncDebug {
 public:
  // Sets the mode DTRAIN_CUDA_SYNC_DEBUG asks for, on a CUDA device only.
  explicit StepSyncDebug(const c10::Device& device);
  // Restores the mode there was.
  ~StepSyncDebug();
  StepSyncDebug(const StepSyncDebug&) = delete;
  StepSyncDebug& operator=(const StepSyncDebug&) = delete;

  // Whether `error` is the mode's complaint about a synchronising operation.
  static bool is_sync_error(const std::exception& error);

 private:
  bool set_ = false;
  int previous_ = 0;
};

}  // namespace dtrain::train::detail

#include "step_sync_debug.h"

#include <cstdlib>
#include <string_view>

#include "dtrain/config.h"
#include "dtrain/util/errors.h"
#if DTRAIN_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace dtrain::train::detail {

namespace {

// DTRAIN_CUDA_SYNC_DEBUG: 0 off (unset, "", "off"), 1 warn, 2 error.
int requested_mode() {
  static const int mode = [] {
    const char* value = std::getenv("DTRAIN_CUDA_SYNC_DEBUG");
    const std::string_view word = value == nullptr ? "" : value;
    if (word.empty() || word == "off" || word == "0") {
      return 0;
    }
    DTRAIN_CHECK(word == "warn" || word == "error",
                 "DTRAIN_CUDA_SYNC_DEBUG must be off, warn or error, got '", word, "'");
    return word == "warn" ? 1 : 2;
  }();
  return mode;
}

}  // namespace

StepSyncDebug::StepSyncDebug(const c10::Device& device) {
#if DTRAIN_WITH_CUDA
  const int mode = requested_mode();
  if (mode == 0 || !device.is_cuda()) {
    return;
  }
  auto& state = c10::cuda::warning_state();
  previous_ = static_cast<int>(state.get_sync_debug_mode());
  state.set_sync_debug_mode(mode == 1 ? c10::cuda::SyncDebugMode::L_WARN
                                      : c10::cuda::SyncDebugMode::L_ERROR);
  set_ = true;
#else
  (void)device;
#endif
}

StepSyncDebug::~StepSyncDebug() {
#if DTRAIN_WITH_CUDA
  if (set_) {
    c10::cuda::warning_state().set_sync_debug_mode(
        static_cast<c10::cuda::SyncDebugMode>(previous_));
  }
#endif
}

bool StepSyncDebug::is_sync_error(const std::exception& error) {
  return std::string_view(error.what()).find("called a synchronizing CUDA operation") !=
         std::string_view::npos;
}

}  // namespace dtrain::train::detail

// Waiting for a CUDA event with a limit, where cudaEventSynchronize would
// wait forever for work that never finishes (host code only).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

#include "cuda_check.cuh"

namespace dtrain::kernels::cuda::experimental {

// Whether `event` completed within `limit`: polls it, sleeping briefly
// between polls, and returns false once the limit has passed (the work
// before the event then still runs on the device). A CUDA error other than
// "not ready" is thrown. The event's own timestamps, not this wait, time
// the work, so the polling does not change a measurement.
inline bool event_done_within(cudaEvent_t event, std::chrono::steady_clock::duration limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) {
      return true;
    }
    if (status != cudaErrorNotReady) {
      DTRAIN_CUDA_CHECK(status);
    }
    // "Not ready" is no fault, but the runtime may keep it as the last
    // error, where the next launch check (cudaGetLastError) would take it
    // for one: clear it.
    (void)cudaGetLastError();
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace dtrain::kernels::cuda::experimental

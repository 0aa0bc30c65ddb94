// Autocast as an RAII guard: the C++ counterpart of `with torch.autocast(...)`.
//
//   {
//     dtrain::amp::AutocastGuard autocast(at::kCPU);   // bf16 on CPU
//     at::Tensor loss = loss_fn(model(x), y);          // matmuls, convs in bf16
//   }                                                 // previous state restored
//   dtrain::amp::AutocastGuard fp16(dtrain::amp::AutocastOptions(at::kCUDA).dtype(at::kHalf));
//
// Contract:
//  - The guard sets, for its device type, whether autocast is on and in which
//    dtype, plus whether casts are cached; on destruction it restores exactly
//    what it found, so guards nest (an inner `.enabled(false)` guard makes an
//    fp32 region inside an autocast one).
//  - When the outermost guard of this thread ends, the cache of casted
//    weights is cleared (as torch.autocast does), so the next iteration casts
//    the updated weights again.
//  - Autocast state is thread-local: create and destroy a guard on one
//    thread. Guards end in reverse order of creation (they are scoped
//    objects; not copyable, not movable).
//  - Dtypes: CPU takes bfloat16 (default) or float16; CUDA takes float16
//    (default) or bfloat16. Anything else throws dtrain::Error naming it.
//    The backward pass needs no guard: gradients come out in the dtype of the
//    forward values.
#pragma once

#include <optional>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/arg.h>

namespace dtrain::amp {

struct AutocastOptions {
  /* implicit */ AutocastOptions(c10::DeviceType device_type) : device_type_(device_type) {}

  // kCPU or kCUDA.
  TORCH_ARG(c10::DeviceType, device_type);
  // The lower-precision dtype; unset: bfloat16 on CPU, float16 on CUDA.
  TORCH_ARG(std::optional<c10::ScalarType>, dtype) = std::nullopt;
  // false: autocast is switched off inside the guard (an fp32 region).
  TORCH_ARG(bool, enabled) = true;
  // Cache the low-precision copies of leaf tensors (weights) while the
  // outermost guard lives; torch.autocast's cache_enabled.
  TORCH_ARG(bool, cache_enabled) = true;
};

// The dtype AutocastOptions resolves to (dtype, else the device's default);
// throws dtrain::Error for an unsupported device type or dtype.
c10::ScalarType resolve_autocast_dtype(const AutocastOptions& options);

// Whether autocast is on for `device_type` in this thread, and its dtype.
bool is_autocast_enabled(c10::DeviceType device_type);
c10::ScalarType autocast_dtype(c10::DeviceType device_type);

class AutocastGuard {
 public:
  explicit AutocastGuard(const AutocastOptions& options);
  ~AutocastGuard();

  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  AutocastGuard(AutocastGuard&&) = delete;
  AutocastGuard& operator=(AutocastGuard&&) = delete;

 private:
  c10::DeviceType device_type_;
  bool previous_enabled_;
  c10::ScalarType previous_dtype_;
  bool previous_cache_enabled_;
};

}  // namespace dtrain::amp

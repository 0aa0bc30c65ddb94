// Internal: the one place that knows how the pinned LibTorch spells its
// autocast switches. LibTorch >= 2.4 takes the device type as an argument
// (at::autocast::set_autocast_enabled(at::kCPU, true)); older releases had
// one function per device (set_enabled for CUDA, set_cpu_enabled, ...).
// Everything else in dtrain::amp calls these wrappers only.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 4)
#error "dtrain::amp needs LibTorch >= 2.4 (device-type autocast API); see docs/libtorch.md"
#endif

namespace dtrain::amp::compat {

inline bool is_enabled(c10::DeviceType device) {
  return at::autocast::is_autocast_enabled(device);
}
inline void set_enabled(c10::DeviceType device, bool enabled) {
  at::autocast::set_autocast_enabled(device, enabled);
}
inline c10::ScalarType dtype(c10::DeviceType device) {
  return at::autocast::get_autocast_dtype(device);
}
inline void set_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}
inline bool is_cache_enabled() {
  return at::autocast::is_autocast_cache_enabled();
}
inline void set_cache_enabled(bool enabled) {
  at::autocast::set_autocast_cache_enabled(enabled);
}
// Both return the nesting depth after the change (shared by all device types).
inline int increment_nesting() {
  return at::autocast::increment_nesting();
}
inline int decrement_nesting() {
  return at::autocast::decrement_nesting();
}
inline void clear_cache() {
  at::autocast::clear_cache();
}

}  // namespace dtrain::amp::compat

#include "dtrain/amp/autocast.h"

#include "autocast_compat.h"
#include "dtrain/util/errors.h"

namespace dtrain::amp {

c10::ScalarType resolve_autocast_dtype(const AutocastOptions& options) {
  const c10::DeviceType device = options.device_type();
  DTRAIN_CHECK(device == c10::kCPU || device == c10::kCUDA,
               "AutocastOptions: device_type must be cpu or cuda, got ", device);
  const c10::ScalarType dtype =
      options.dtype().value_or(device == c10::kCPU ? c10::kBFloat16 : c10::kHalf);
  DTRAIN_CHECK(dtype == c10::kBFloat16 || dtype == c10::kHalf, "AutocastOptions: dtype for ",
               device, " must be BFloat16 or Half, got ", dtype);
  return dtype;
}

bool is_autocast_enabled(c10::DeviceType device_type) {
  return compat::is_enabled(device_type);
}

c10::ScalarType autocast_dtype(c10::DeviceType device_type) {
  return compat::dtype(device_type);
}

// The order of torch.autocast.__enter__/__exit__ (torch/amp/autocast_mode.py),
// so a dtrain guard and a Python `with torch.autocast` nest with each other.
AutocastGuard::AutocastGuard(const AutocastOptions& options) : device_type_(options.device_type()) {
  // Checked first: a guard that throws has changed nothing.
  const c10::ScalarType dtype = resolve_autocast_dtype(options);
  previous_enabled_ = compat::is_enabled(device_type_);
  previous_dtype_ = compat::dtype(device_type_);
  previous_cache_enabled_ = compat::is_cache_enabled();
  compat::set_enabled(device_type_, options.enabled());
  compat::set_dtype(device_type_, dtype);
  compat::increment_nesting();
  compat::set_cache_enabled(options.cache_enabled());
}

AutocastGuard::~AutocastGuard() {
  if (compat::decrement_nesting() == 0) {
    compat::clear_cache();
  }
  compat::set_enabled(device_type_, previous_enabled_);
  compat::set_dtype(device_type_, previous_dtype_);
  compat::set_cache_enabled(previous_cache_enabled_);
}

}  // namespace dtrain::amp

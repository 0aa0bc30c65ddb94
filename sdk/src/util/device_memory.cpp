#include "dtrain/util/device_memory.h"

#include <cstddef>

#include <ATen/DeviceAccelerator.h>

namespace dtrain::util {

void reset_peak_device_memory(c10::Device device) {
  if (device.is_cuda()) {
    at::accelerator::resetPeakStats(device.index());
  }
}

double peak_device_mb(c10::Device device) {
  if (!device.is_cuda()) {
    return 0;
  }
  const auto stats = at::accelerator::getDeviceStats(device.index());
  const auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return static_cast<double>(stats.allocated_bytes[aggregate].peak) / (1 << 20);
}

}  // namespace dtrain::util

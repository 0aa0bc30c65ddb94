#include "dtrain/ddp/data_parallel.h"

#include <torch/cuda.h>

#include "dtrain/util/errors.h"

namespace dtrain::ddp {
namespace {

std::string plural_devices(int64_t n) {
  return std::to_string(n) + (n == 1 ? " CUDA device is" : " CUDA devices are");
}

void check_device(const c10::Device& device, int64_t cuda_device_count, const char* what) {
  if (device.is_cpu()) {
    return;
  }
  DTRAIN_CHECK(device.is_cuda(), "DataParallel: ", what, " ", device.str(),
               " is neither a CUDA device nor the CPU");
  DTRAIN_CHECK(device.has_index(), "DataParallel: ", what, " ", device.str(),
               " needs an index (e.g. cuda:0)");
  DTRAIN_CHECK(device.index() < cuda_device_count, "DataParallel: ", what, " ", device.str(),
               " was requested but only ", plural_devices(cuda_device_count), " visible");
}

}  // namespace

int64_t visible_cuda_devices() {
  return static_cast<int64_t>(torch::cuda::device_count());
}

std::vector<c10::Device> data_parallel_devices(const DataParallelOptions& options,
                                               int64_t cuda_device_count) {
  DTRAIN_CHECK(!(options.devices() && options.num_devices()),
               "DataParallel: give devices or num_devices, not both");
  std::vector<c10::Device> devices;
  if (options.num_devices()) {
    const int64_t n = *options.num_devices();
    DTRAIN_CHECK(n >= 1, "DataParallel: num_devices must be >= 1, got ", n);
    DTRAIN_CHECK(n <= cuda_device_count, "DataParallel: num_devices is ", n, " but only ",
                 plural_devices(cuda_device_count), " visible");
    for (int64_t i = 0; i < n; ++i) {
      devices.emplace_back(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
    }
  } else if (options.devices()) {
    devices = *options.devices();
    DTRAIN_CHECK(!devices.empty(), "DataParallel: devices must not be empty");
    for (const auto& device : devices) {
      check_device(device, cuda_device_count, "device");
      DTRAIN_CHECK(!device.is_cpu() || devices.size() == 1,
                   "DataParallel: the CPU can only be used alone, got it among ", devices.size(),
                   " devices");
    }
  } else if (cuda_device_count > 0) {
    for (int64_t i = 0; i < cuda_device_count; ++i) {
      devices.emplace_back(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
    }
  } else {
    devices.emplace_back(c10::kCPU);
  }
  if (options.output_device()) {
    check_device(*options.output_device(), cuda_device_count, "output_device");
  }
  return devices;
}

}  // namespace dtrain::ddp

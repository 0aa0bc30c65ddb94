// Peak memory of a device's caching allocator, for reports: the training
// applications' peak_device_mb and the step benchmarks' column of that name,
// which mean the same as torch.cuda.reset_peak_memory_stats() followed by
// torch.cuda.max_memory_allocated(), so dtrain's and PyTorch's rows compare.
#pragma once

#include <c10/core/Device.h>

namespace dtrain::util {

// Starts a new peak for `device` (its current allocation becomes the peak).
// A no-op off CUDA: the CPU allocator keeps no such statistics.
void reset_peak_device_memory(c10::Device device);

// The most bytes held by tensors on `device` since the last reset, in MiB;
// 0 off CUDA (host memory is util::peak_rss_bytes' business).
double peak_device_mb(c10::Device device);

}  // namespace dtrain::util

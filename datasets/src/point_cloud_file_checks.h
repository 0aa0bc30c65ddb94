// What every point cloud reader checks of what it read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::datasets::detail {

// `values` as a (P, columns) float tensor. Throws dtrain::IOError naming
// `path` when there are no points or a value is not finite.
at::Tensor checked_cloud(std::vector<float> values, int64_t columns, const std::string& path);

}  // namespace dtrain::datasets::detail

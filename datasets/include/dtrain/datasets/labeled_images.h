// Images with one class label each, held in memory: what the image readers
// (Fashion-MNIST, CIFAR-10) return.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::datasets {

struct LabeledImages {
  at::Tensor images;  // (N, C, H, W) float32
  at::Tensor labels;  // (N,) int64 in [0, class_names.size())
  std::vector<std::string> class_names;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

}  // namespace dtrain::datasets

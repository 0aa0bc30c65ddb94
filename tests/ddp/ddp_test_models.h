// Small models and data for the DDP tests: each rank trains a DDP replica
// on its slice of a global batch, and compares it with a single-process
// reference trained on the whole global batch.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace dtrain::testing {

// Linear layers of very different sizes (7 to 24k parameters), so small
// bucket caps spread them over several buckets. With `with_unused_layers`,
// also `skip`, a layer forward uses only when asked, and `never`, one it
// never uses.
class ManySizesImpl : public torch::nn::Module {
 public:
  explicit ManySizesImpl(bool with_unused_layers = false) {
    const std::vector<std::int64_t> widths = {16, 200, 3, 120, 64, 7, 10};
    for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
      layers_.push_back(
          register_module("fc" + std::to_string(i), torch::nn::Linear(widths[i], widths[i + 1])));
    }
    if (with_unused_layers) {
      skip_ = register_module("skip", torch::nn::Linear(16, 10));
      never_ = register_module("never", torch::nn::Linear(4, 4));
    }
  }
  // x: (B, 16) -> (B, 10). use_skip adds the skip branch.
  at::Tensor forward(const at::Tensor& x, bool use_skip = false) {
    at::Tensor h = x;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      h = layers_[i]->forward(h);
      if (i + 1 < layers_.size()) {
        h = at::tanh(h);
      }
    }
    return use_skip ? h + skip_->forward(x) : h;
  }

 private:
  std::vector<torch::nn::Linear> layers_;
  torch::nn::Linear skip_{nullptr};
  torch::nn::Linear never_{nullptr};
};
TORCH_MODULE(ManySizes);

// Rows [begin, end) of `global` that rank `rank` of `world` owns when
// `sizes[r]` rows go to rank r in rank order.
inline at::Tensor rank_slice(const at::Tensor& global, const std::vector<std::int64_t>& sizes,
                             int rank) {
  std::int64_t begin = 0;
  for (int r = 0; r < rank; ++r) {
    begin += sizes[static_cast<std::size_t>(r)];
  }
  return global.narrow(0, begin, sizes[static_cast<std::size_t>(rank)]);
}

inline double max_abs_difference(const std::vector<at::Tensor>& a,
                                 const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

}  // namespace dtrain::testing

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/ops/scalar_tensor.h>

#include <atomic>
#include <cmath>

#include "../dispatch.h"

namespace dtrain::kernels::detail {

namespace {

// argmax of one row with torch.argmax's rules: first maximum wins, NaN is largest.
template <typename scalar_t>
int64_t row_argmax(const scalar_t* row, int64_t cols) {
  int64_t best = 0;
  float best_value = static_cast<float>(row[0]);
  for (int64_t j = 1; j < cols; ++j) {
    const float value = static_cast<float>(row[j]);
    if (std::isnan(best_value)) {
      break;
    }
    if (value > best_value || std::isnan(value)) {
      best = j;
      best_value = value;
    }
  }
  return best;
}

}  // namespace

at::Tensor count_correct_cpu(const at::Tensor& logits, const at::Tensor& labels) {
  const int64_t rows = logits.size(0);
  const int64_t cols = logits.size(1);
  const int64_t* label_data = labels.const_data_ptr<int64_t>();
  std::atomic<int64_t> correct{0};
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, logits.scalar_type(), "count_correct_cpu", [&] {
        const scalar_t* data = logits.const_data_ptr<scalar_t>();
        at::parallel_for(0, rows, /*grain_size=*/2048, [&](int64_t begin, int64_t end) {
          int64_t local = 0;
          for (int64_t i = begin; i < end; ++i) {
            local += row_argmax(data + i * cols, cols) == label_data[i] ? 1 : 0;
          }
          correct += local;
        });
      });
  return at::scalar_tensor(correct.load(), at::TensorOptions().dtype(at::kLong));
}

}  // namespace dtrain::kernels::detail

// The CPU passes of the fused batch norm + ReLU (Note [fused batch norm
// ReLU] in src/batch_norm_relu.cpp) over rows of channels.
//
// Every pass walks whole rows with the channels innermost, so the inner
// loops run over contiguous memory and vectorise (this file compiles with
// -O3; see kernels/CMakeLists.txt). The sums are made per block of
// kRowsPerBlock rows and the blocks added in order, so they do not depend
// on the thread count.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "../dispatch.h"
#include "norm_relu_rows.h"

namespace dtrain::kernels::detail {

namespace {

constexpr int64_t kRowsPerBlock = 256;

int64_t block_count(int64_t rows) {
  return (rows + kRowsPerBlock - 1) / kRowsPerBlock;
}

// Adds each block's per-channel sums, kept in double, in block order.
std::vector<double> add_blocks(const std::vector<double>& blocks, int64_t channels) {
  std::vector<double> total(static_cast<size_t>(channels), 0.0);
  const int64_t count = static_cast<int64_t>(blocks.size()) / std::max<int64_t>(channels, 1);
  for (int64_t block = 0; block < count; ++block) {
    const double* sums = blocks.data() + block * channels;
    for (int64_t c = 0; c < channels; ++c) {
      total[c] += sums[c];
    }
  }
  return total;
}

// Runs `sum_block(begin, end, acc)` on every block of rows in parallel;
// `acc` holds `lanes` x channels zeros in Scalar for the block to add into.
// Returns the block sums added in order, per lane and channel, in double.
template <typename Scalar, typename SumBlock>
std::vector<double> sum_over_blocks(int64_t rows, int64_t channels, int64_t lanes,
                                    const SumBlock& sum_block) {
  const int64_t blocks = block_count(rows);
  const int64_t width = lanes * channels;
  std::vector<double> block_sums(static_cast<size_t>(blocks * width), 0.0);
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    std::vector<Scalar> acc(static_cast<size_t>(width));
    for (int64_t block = first; block < last; ++block) {
      std::fill(acc.begin(), acc.end(), Scalar(0));
      const int64_t begin = block * kRowsPerBlock;
      sum_block(begin, std::min(rows, begin + kRowsPerBlock), acc.data());
      double* out = block_sums.data() + block * width;
      for (int64_t i = 0; i < width; ++i) {
        out[i] = static_cast<double>(acc[i]);
      }
    }
  });
  return add_blocks(block_sums, width);
}

template <typename Scalar>
at::Tensor as_tensor(const std::vector<double>& values, int64_t offset, int64_t count,
                     const at::TensorOptions& options) {
  at::Tensor out = at::empty({count}, options);
  Scalar* data = out.data_ptr<Scalar>();
  for (int64_t i = 0; i < count; ++i) {
    data[i] = static_cast<Scalar>(values[offset + i]);
  }
  return out;
}

template <typename Scalar>
NormReluForward forward_rows(const at::Tensor& rows, const at::Tensor& weight,
                             const at::Tensor& bias, double eps) {
  const int64_t count = rows.size(0);
  const int64_t channels = rows.size(1);
  const Scalar* x = rows.const_data_ptr<Scalar>();
  const at::TensorOptions options = rows.options();

  // Mean, then the sum of squared deviations from it: two passes, as ATen's
  // batch norm does, so a large mean does not cost the variance its digits.
  const std::vector<double> sums =
      sum_over_blocks<Scalar>(count, channels, 1, [&](int64_t begin, int64_t end, Scalar* acc) {
        for (int64_t r = begin; r < end; ++r) {
          add_row(x + r * channels, channels, acc);
        }
      });
  std::vector<Scalar> mean(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<Scalar>(sums[c] / static_cast<double>(count));
  }
  const std::vector<double> squares =
      sum_over_blocks<Scalar>(count, channels, 1, [&](int64_t begin, int64_t end, Scalar* acc) {
        for (int64_t r = begin; r < end; ++r) {
          add_squared_deviation_row(x + r * channels, mean.data(), channels, acc);
        }
      });

  NormReluForward result;
  result.mean = at::empty({channels}, options);
  result.invstd = at::empty({channels}, options);
  result.variance_sum = as_tensor<Scalar>(squares, 0, channels, options);
  std::copy(mean.begin(), mean.end(), result.mean.data_ptr<Scalar>());
  const Scalar* gamma = weight.const_data_ptr<Scalar>();
  const Scalar* beta = bias.const_data_ptr<Scalar>();
  Scalar* invstd = result.invstd.data_ptr<Scalar>();
  std::vector<Scalar> scale(static_cast<size_t>(channels));
  std::vector<Scalar> shift(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    invstd[c] = static_cast<Scalar>(1.0 / std::sqrt(squares[c] / static_cast<double>(count) + eps));
    scale[c] = gamma[c] * invstd[c];
    shift[c] = beta[c] - mean[c] * scale[c];
  }

  result.output = at::empty_like(rows);
  Scalar* y = result.output.data_ptr<Scalar>();
  at::parallel_for(0, count, kRowsPerBlock, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      normalize_relu_row(x + r * channels, scale.data(), shift.data(), channels, y + r * channels);
    }
  });
  return result;
}

template <typename Scalar>
NormReluBackward backward_rows(const at::Tensor& grad_rows, const at::Tensor& rows,
                               const at::Tensor& weight, const at::Tensor& bias,
                               const at::Tensor& mean_t, const at::Tensor& invstd_t) {
  const int64_t count = rows.size(0);
  const int64_t channels = rows.size(1);
  const Scalar* x = rows.const_data_ptr<Scalar>();
  const Scalar* grad = grad_rows.const_data_ptr<Scalar>();
  const Scalar* mean = mean_t.const_data_ptr<Scalar>();
  const Scalar* invstd = invstd_t.const_data_ptr<Scalar>();
  const Scalar* gamma = weight.const_data_ptr<Scalar>();
  const Scalar* beta = bias.const_data_ptr<Scalar>();
  // The forward's scale and shift, computed the same way, so the ReLU's
  // mask is recomputed bit for bit rather than saved.
  std::vector<Scalar> scale(static_cast<size_t>(channels));
  std::vector<Scalar> shift(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    scale[c] = gamma[c] * invstd[c];
    shift[c] = beta[c] - mean[c] * scale[c];
  }

  // Lane 0: the sum of the gradient that passed the ReLU; lane 1: its sum
  // weighted by the centred input.
  const std::vector<double> sums =
      sum_over_blocks<Scalar>(count, channels, 2, [&](int64_t begin, int64_t end, Scalar* acc) {
        for (int64_t r = begin; r < end; ++r) {
          add_masked_grad_row(x + r * channels, grad + r * channels, scale.data(), shift.data(),
                              mean, channels, acc, acc + channels);
        }
      });

  const at::TensorOptions options = rows.options();
  NormReluBackward result;
  result.grad_bias = as_tensor<Scalar>(sums, 0, channels, options);
  result.grad_weight = as_tensor<Scalar>(sums, channels, channels, options);
  Scalar* grad_weight = result.grad_weight.data_ptr<Scalar>();
  // grad_input = scale * (g - sum(g) / R - (x - mean) * invstd^2 * sum(g (x - mean)) / R)
  std::vector<Scalar> grad_mean(static_cast<size_t>(channels));
  std::vector<Scalar> centred_factor(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const double n = static_cast<double>(count);
    grad_mean[c] = static_cast<Scalar>(sums[c] / n);
    centred_factor[c] = static_cast<Scalar>(sums[channels + c] * invstd[c] * invstd[c] / n);
    grad_weight[c] = static_cast<Scalar>(sums[channels + c] * invstd[c]);
  }
  result.grad_input = at::empty_like(rows);
  Scalar* grad_input = result.grad_input.data_ptr<Scalar>();
  at::parallel_for(0, count, kRowsPerBlock, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      grad_input_row(x + r * channels, grad + r * channels, scale.data(), shift.data(), mean,
                     grad_mean.data(), centred_factor.data(), channels, grad_input + r * channels);
    }
  });
  return result;
}

}  // namespace

NormReluForward batch_norm_relu_forward_cpu(const at::Tensor& rows, const at::Tensor& weight,
                                            const at::Tensor& bias, double eps) {
  if (rows.scalar_type() == at::kDouble) {
    return forward_rows<double>(rows, weight, bias, eps);
  }
  return forward_rows<float>(rows, weight, bias, eps);
}

NormReluBackward batch_norm_relu_backward_cpu(const at::Tensor& grad_rows, const at::Tensor& rows,
                                              const at::Tensor& weight, const at::Tensor& bias,
                                              const at::Tensor& mean, const at::Tensor& invstd) {
  if (rows.scalar_type() == at::kDouble) {
    return backward_rows<double>(grad_rows, rows, weight, bias, mean, invstd);
  }
  return backward_rows<float>(grad_rows, rows, weight, bias, mean, invstd);
}

}  // namespace dtrain::kernels::detail

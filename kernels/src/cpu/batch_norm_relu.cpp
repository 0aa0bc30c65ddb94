// The CPU passes of the fused batch norm + ReLU (Note [fused batch norm
// ReLU] in src/batch_norm_relu.cpp) over rows of channels.
//
// The row loops (cpu/norm_relu_rows.h) vectorise: this file compiles with
// -O3 (see kernels/CMakeLists.txt), and on x86-64 CPUs with AVX-512 or AVX2
// they run in functions compiled for it (Avx512Passes, Avx2Passes below);
// DTRAIN_CPU_BATCH_NORM_RELU = baseline | avx2 | avx512 forces one, for
// tests and benchmarks. The sums are
// made per block of kRowsPerBlock rows and the blocks added in order, so
// they do not depend on the thread count.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "../dispatch.h"
#include "norm_relu_rows.h"
#include "vector_build.h"

namespace dtrain::kernels::detail {

namespace {

constexpr int64_t kRowsPerBlock = 256;

// The row loops over rows of Storage computed in Scalar
// (cpu/norm_relu_rows.h), compiled for one instruction set: each pass only
// calls its always-inlined loop, which thereby compiles as its caller does,
// under ATTRIBUTES (nothing, or a target() attribute). A macro, since a
// target attribute cannot be a template argument.
#define DTRAIN_ROW_PASSES(Name, ATTRIBUTES)                                                       \
  template <typename Storage>                                                                     \
  struct Name {                                                                                   \
    using storage_type = Storage;                                                                 \
    using scalar_type = ComputeOf<Storage>;                                                       \
    using Scalar = scalar_type;                                                                   \
    ATTRIBUTES static void add(const Storage* x, int64_t begin, int64_t end, int64_t channels,    \
                               Scalar* acc) {                                                     \
      add_rows(x, begin, end, channels, acc);                                                     \
    }                                                                                             \
    ATTRIBUTES static void add_squared_deviation(const Storage* x, const Scalar* mean,            \
                                                 int64_t begin, int64_t end, int64_t channels,    \
                                                 Scalar* acc) {                                   \
      add_squared_deviation_rows(x, mean, begin, end, channels, acc);                             \
    }                                                                                             \
    ATTRIBUTES static void normalize_relu(const Storage* x, const Scalar* scale,                  \
                                          const Scalar* shift, int64_t begin, int64_t end,        \
                                          int64_t channels, Storage* y) {                         \
      normalize_relu_rows(x, scale, shift, begin, end, channels, y);                              \
    }                                                                                             \
    ATTRIBUTES static void add_masked_grad(const Storage* x, const Storage* grad,                 \
                                           const Scalar* scale, const Scalar* shift,              \
                                           const Scalar* mean, int64_t begin, int64_t end,        \
                                           int64_t channels, Scalar* grad_sum,                    \
                                           Scalar* centred_sum) {                                 \
      add_masked_grad_rows(x, grad, scale, shift, mean, begin, end, channels, grad_sum,           \
                           centred_sum);                                                          \
    }                                                                                             \
    ATTRIBUTES static void grad_input(const Storage* x, const Storage* grad, const Scalar* scale, \
                                      const Scalar* shift, const Scalar* mean,                    \
                                      const Scalar* grad_mean, const Scalar* centred_factor,      \
                                      int64_t begin, int64_t end, int64_t channels,               \
                                      Storage* out) {                                             \
      grad_input_rows(x, grad, scale, shift, mean, grad_mean, centred_factor, begin, end,         \
                      channels, out);                                                             \
    }                                                                                             \
  };

DTRAIN_ROW_PASSES(BaselinePasses, )
#if defined(__x86_64__)
// Eight floats a vector instead of four: 1.42-1.66x LibTorch's pair on one
// thread against 1.32-1.66x for the baseline build (docs/design/kernels.md).
DTRAIN_ROW_PASSES(Avx2Passes, DTRAIN_TARGET_AVX2)
// Sixteen floats a vector: bfloat16 rows gain most, as their rounding is
// integer work per value; float32 rows are mostly bound by memory.
DTRAIN_ROW_PASSES(Avx512Passes, DTRAIN_TARGET_AVX512)
#endif
#undef DTRAIN_ROW_PASSES

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

template <typename Passes>
NormReluForward forward_rows(const at::Tensor& rows, const at::Tensor& weight,
                             const at::Tensor& bias, double eps) {
  using Storage = typename Passes::storage_type;
  using Scalar = typename Passes::scalar_type;
  const int64_t count = rows.size(0);
  const int64_t channels = rows.size(1);
  const Storage* x = rows.const_data_ptr<Storage>();
  // Statistics in the type the rows are computed in (float for bfloat16).
  const at::TensorOptions options = rows.options().dtype(c10::CppTypeToScalarType<Scalar>::value);

  // Mean, then the sum of squared deviations from it: two passes, as ATen's
  // batch norm does, so a large mean does not cost the variance its digits.
  const std::vector<double> sums = sum_over_blocks<Scalar>(
      count, channels, 1,
      [&](int64_t begin, int64_t end, Scalar* acc) { Passes::add(x, begin, end, channels, acc); });
  std::vector<Scalar> mean(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<Scalar>(sums[c] / static_cast<double>(count));
  }
  const std::vector<double> squares =
      sum_over_blocks<Scalar>(count, channels, 1, [&](int64_t begin, int64_t end, Scalar* acc) {
        Passes::add_squared_deviation(x, mean.data(), begin, end, channels, acc);
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
  Storage* y = result.output.data_ptr<Storage>();
  at::parallel_for(0, count, kRowsPerBlock, [&](int64_t begin, int64_t end) {
    Passes::normalize_relu(x, scale.data(), shift.data(), begin, end, channels, y);
  });
  return result;
}

template <typename Passes>
NormReluBackward backward_rows(const at::Tensor& grad_rows, const at::Tensor& rows,
                               const at::Tensor& weight, const at::Tensor& bias,
                               const at::Tensor& mean_t, const at::Tensor& invstd_t) {
  using Storage = typename Passes::storage_type;
  using Scalar = typename Passes::scalar_type;
  const int64_t count = rows.size(0);
  const int64_t channels = rows.size(1);
  const Storage* x = rows.const_data_ptr<Storage>();
  const Storage* grad = grad_rows.const_data_ptr<Storage>();
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
        Passes::add_masked_grad(x, grad, scale.data(), shift.data(), mean, begin, end, channels,
                                acc, acc + channels);
      });

  const at::TensorOptions options = rows.options().dtype(c10::CppTypeToScalarType<Scalar>::value);
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
  Storage* grad_input = result.grad_input.data_ptr<Storage>();
  at::parallel_for(0, count, kRowsPerBlock, [&](int64_t begin, int64_t end) {
    Passes::grad_input(x, grad, scale.data(), shift.data(), mean, grad_mean.data(),
                       centred_factor.data(), begin, end, channels, grad_input);
  });
  return result;
}

// Runs `run` with the row passes for this CPU and rows of `type`.
template <template <typename> class Passes, typename Run>
auto with_storage(at::ScalarType type, Run&& run) {
  switch (type) {
    case at::kDouble:
      return run(Passes<double>{});
    case at::kBFloat16:
      return run(Passes<c10::BFloat16>{});
    default:
      return run(Passes<float>{});
  }
}

template <typename Run>
auto with_passes(at::ScalarType type, Run&& run) {
  switch (vector_build("DTRAIN_CPU_BATCH_NORM_RELU")) {
#if defined(__x86_64__)
    case VectorBuild::kAvx512:
      return with_storage<Avx512Passes>(type, run);
    case VectorBuild::kAvx2:
      return with_storage<Avx2Passes>(type, run);
#endif
    default:
      return with_storage<BaselinePasses>(type, run);
  }
}

}  // namespace

NormReluForward batch_norm_relu_forward_cpu(const at::Tensor& rows, const at::Tensor& weight,
                                            const at::Tensor& bias, double eps) {
  return with_passes(rows.scalar_type(), [&](auto passes) {
    return forward_rows<decltype(passes)>(rows, weight, bias, eps);
  });
}

NormReluBackward batch_norm_relu_backward_cpu(const at::Tensor& grad_rows, const at::Tensor& rows,
                                              const at::Tensor& weight, const at::Tensor& bias,
                                              const at::Tensor& mean, const at::Tensor& invstd) {
  return with_passes(rows.scalar_type(), [&](auto passes) {
    return backward_rows<decltype(passes)>(grad_rows, rows, weight, bias, mean, invstd);
  });
}

}  // namespace dtrain::kernels::detail

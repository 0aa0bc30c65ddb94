// dtrain::kernels::neighbour_max against LibTorch's max over the neighbour
// dimension: the same values and the same gradient, bit for bit, ties and
// NaN included; and its input checks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/kernels/neighbour_max.h"
#include "test_support.h"

namespace {

namespace k = dtrain::kernels;

struct MaxOutcome {
  at::Tensor values, grad;
};

// Values and the gradient of sum(values * probe), through `pool`.
template <typename Pool>
MaxOutcome run(Pool pool, const at::Tensor& grouped, const at::Tensor& probe) {
  const at::Tensor x = grouped.detach().requires_grad_();
  const at::Tensor values = pool(x);
  (values * probe).sum().backward();
  return {values.detach(), x.grad()};
}

at::Tensor libtorch_max(const at::Tensor& x) {
  return std::get<0>(x.max(3));
}

void expect_same_as_libtorch(const at::Tensor& grouped) {
  const at::Tensor probe =
      at::randn({grouped.size(0), grouped.size(1), grouped.size(2)}, grouped.options());
  const MaxOutcome want = run(libtorch_max, grouped, probe);
  const MaxOutcome got = run(k::neighbour_max, grouped, probe);
  EXPECT_TRUE(at::equal(got.values.nan_to_num(7), want.values.nan_to_num(7)));
  EXPECT_TRUE(at::equal(got.grad, want.grad));
  // Channels innermost, as the next layer's grouping reads them.
  EXPECT_TRUE(got.values.transpose(1, 2).is_contiguous()) << got.values.strides();
  EXPECT_TRUE(got.grad.is_contiguous(at::MemoryFormat::ChannelsLast)) << got.grad.strides();
}

at::Tensor channels_last(const at::Tensor& t) {
  return t.contiguous(at::MemoryFormat::ChannelsLast);
}

// Each test below runs every vector build of the loops this CPU runs.
TEST(NeighbourMax, MatchesLibTorchBitForBit) {
  for (const std::string& build : dtrain::testing::cpu_vector_builds()) {
    SCOPED_TRACE(build);
    dtrain::testing::ScopedEnv forced("DTRAIN_CPU_NEIGHBOUR_MAX", build.c_str());
    at::manual_seed(0);
    // 37 channels: whole AVX-512, AVX2 and SSE vectors, and a remainder.
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
             {2, 5, 7, 3}, {3, 37, 20, 16}, {2, 8, 1, 40}, {1, 4, 6, 1}}) {
      SCOPED_TRACE(::testing::PrintToString(shape));
      expect_same_as_libtorch(channels_last(at::randn(shape)));
      expect_same_as_libtorch(channels_last(at::randn(shape, at::kDouble)));
      // What a CPU bf16 autocast convolution hands the pool.
      expect_same_as_libtorch(channels_last(at::randn(shape, at::kBFloat16)));
    }
  }
}

TEST(NeighbourMax, TiesGoToTheFirstNeighbourAndTheFirstNaNWins) {
  for (const auto& [build, dtype] :
       {std::pair<std::string, at::ScalarType>{"baseline", at::kFloat},
        {"baseline", at::kBFloat16},
        {dtrain::testing::cpu_vector_builds().back(), at::kFloat},
        {dtrain::testing::cpu_vector_builds().back(), at::kBFloat16}}) {
    SCOPED_TRACE(build + " " + c10::toString(dtype));
    dtrain::testing::ScopedEnv forced("DTRAIN_CPU_NEIGHBOUR_MAX", build.c_str());
    at::manual_seed(1);
    // Few distinct values: most maxima are tied between neighbours.
    at::Tensor ties = at::randint(0, 3, {2, 9, 5, 12}).to(dtype);
    expect_same_as_libtorch(channels_last(ties));
    at::Tensor with_nan = at::randn({2, 6, 4, 10}).to(dtype);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    with_nan.index_put_({0, 1, 2, 3}, nan);
    with_nan.index_put_({0, 1, 2, 7}, nan);  // a second NaN in the same group
    with_nan.index_put_({1, 2, 0, 0}, nan);  // NaN as the first neighbour
    with_nan.index_put_({1, 3, 3, 9}, std::numeric_limits<float>::infinity());
    const at::Tensor grouped = channels_last(with_nan);
    expect_same_as_libtorch(grouped);
    const at::Tensor values = k::neighbour_max(grouped).to(at::kFloat);
    EXPECT_TRUE(std::isnan(values[0][1][2].item<float>()));
    EXPECT_TRUE(std::isnan(values[1][2][0].item<float>()));
  }
}

TEST(NeighbourMax, UnsupportedInputsAreNamed) {
  auto message = [](const at::Tensor& x) -> std::string {
    try {
      k::neighbour_max(x);
    } catch (const c10::Error& e) {
      return e.what_without_backtrace();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "no error";
  };
  const at::Tensor contiguous = at::randn({2, 3, 4, 5});
  EXPECT_FALSE(k::neighbour_max_supports(contiguous));
  EXPECT_NE(message(contiguous).find("must be channels-last"), std::string::npos);
  EXPECT_NE(message(channels_last(at::randn({2, 3, 4, 5}).to(at::kHalf)))
                .find("float32, float64 or bfloat16, got Half"),
            std::string::npos);
  EXPECT_NE(message(at::randn({2, 3, 4})).find("shape (B, C, M, K), got shape [2, 3, 4]"),
            std::string::npos);
  EXPECT_NE(message(channels_last(at::randn({2, 3, 4, 0}))).find("at least one neighbour"),
            std::string::npos);
  EXPECT_TRUE(k::neighbour_max_supports(channels_last(at::randn({2, 3, 4, 5}))));
  dtrain::testing::ScopedEnv forced("DTRAIN_CPU_NEIGHBOUR_MAX", "sse4");
  EXPECT_NE(
      message(channels_last(at::randn({2, 3, 4, 5})))
          .find("DTRAIN_CPU_NEIGHBOUR_MAX must be auto, baseline, avx2 or avx512, got 'sse4'"),
      std::string::npos)
      << message(channels_last(at::randn({2, 3, 4, 5})));
}

}  // namespace

// dtrain::kernels::batch_norm_relu against LibTorch's batch_norm + relu on
// the same inputs: values, gradients, running statistics, layouts, NaN, and
// the input checks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/kernels/batch_norm_relu.h"
#include "test_support.h"

namespace {

namespace k = dtrain::kernels;

struct Params {
  at::Tensor weight, bias, running_mean, running_var;
};

Params make_params(int64_t channels, at::ScalarType dtype) {
  const auto options = at::TensorOptions().dtype(dtype);
  Params p{at::rand({channels}, options) + 0.5, at::rand({channels}, options) - 0.5,
           at::randn({channels}, options), at::rand({channels}, options) + 0.5};
  p.weight.requires_grad_();
  p.bias.requires_grad_();
  return p;
}

Params copy(const Params& p) {
  Params c{p.weight.detach().clone(), p.bias.detach().clone(), p.running_mean.clone(),
           p.running_var.clone()};
  c.weight.requires_grad_();
  c.bias.requires_grad_();
  return c;
}

struct Outcome {
  at::Tensor output, grad_input, grad_weight, grad_bias;
};

template <typename Op>
Outcome run(Op op, const at::Tensor& input, Params& p, const at::Tensor& grad) {
  const at::Tensor x = input.detach().requires_grad_();
  const at::Tensor y = op(x, p);
  y.backward(grad);
  return {y.detach(), x.grad(), p.weight.grad(), p.bias.grad()};
}

at::Tensor reference(const at::Tensor& x, Params& p) {
  return at::relu(at::batch_norm(x, p.weight, p.bias, p.running_mean, p.running_var,
                                 /*training=*/true, 0.1, 1e-5, /*cudnn_enabled=*/false));
}

at::Tensor fused(const at::Tensor& x, Params& p) {
  return k::batch_norm_relu(x, p.weight, p.bias, p.running_mean, p.running_var, 0.1, 1e-5);
}

void expect_close(const at::Tensor& got, const at::Tensor& want, double tol, const char* what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.scalar_type(), want.scalar_type()) << what;
  const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  EXPECT_LE(diff, tol * (want.abs().max().item<double>() + 1.0)) << what;
}

// Parameters of `params_type` (the input's by default).
void expect_matches_reference(const at::Tensor& input, double tol,
                              std::optional<at::ScalarType> params_type = std::nullopt) {
  const int64_t channels = input.size(1);
  Params want_params = make_params(channels, params_type.value_or(input.scalar_type()));
  Params got_params = copy(want_params);
  const at::Tensor grad = at::randn_like(input);
  const Outcome want = run(reference, input, want_params, grad);
  const Outcome got = run(fused, input, got_params, grad);
  expect_close(got.output, want.output, tol, "output");
  expect_close(got.grad_input, want.grad_input, tol, "input gradient");
  expect_close(got.grad_weight, want.grad_weight, tol, "weight gradient");
  expect_close(got.grad_bias, want.grad_bias, tol, "bias gradient");
  expect_close(got_params.running_mean, want_params.running_mean, tol, "running mean");
  expect_close(got_params.running_var, want_params.running_var, tol, "running variance");
  // The output keeps the input's layout.
  EXPECT_EQ(got.output.strides(), input.strides());
}

TEST(BatchNormRelu, ChannelsLastMatchesBatchNormThenRelu) {
  at::manual_seed(0);
  // Several blocks of rows, channels of one vector width and not; a mean
  // far from zero, so the variance is taken around it.
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{2, 5, 3, 4}, {4, 64, 32, 16}, {3, 37, 50, 7}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    const at::Tensor input = (at::randn(shape) * 3 + 2).contiguous(at::MemoryFormat::ChannelsLast);
    expect_matches_reference(input, 1e-5);
  }
}

TEST(BatchNormRelu, RowsAndPointMajorFeaturesMatch) {
  at::manual_seed(1);
  expect_matches_reference(at::randn({300, 24}), 1e-5);                    // (N, C)
  expect_matches_reference(at::randn({4, 90, 12}).transpose(1, 2), 1e-5);  // (B, C, L), C innermost
}

TEST(BatchNormRelu, Float64MatchesClosely) {
  at::manual_seed(2);
  expect_matches_reference(
      at::randn({3, 9, 20, 6}, at::kDouble).contiguous(at::MemoryFormat::ChannelsLast), 1e-12);
}

// A CPU bf16 autocast convolution hands the batch norm bfloat16 input
// beside the module's float32 parameters; LibTorch's batch norm then
// computes in float32 and rounds its output to bfloat16 (to nearest even),
// and so does the fused op: their float32 values differ in the last bits,
// so all but a few of the rounded values are the same bits.
TEST(BatchNormRelu, BFloat16InputMatchesLibTorchsMixedTypeBatchNorm) {
  at::manual_seed(4);
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{2, 5, 3, 4}, {4, 64, 32, 16}, {3, 37, 50, 7}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    const at::Tensor input =
        (at::randn(shape) * 3 + 2).to(at::kBFloat16).contiguous(at::MemoryFormat::ChannelsLast);
    expect_matches_reference(input, 2e-2, at::kFloat);

    Params want_params = make_params(shape[1], at::kFloat);
    Params got_params = copy(want_params);
    const at::Tensor grad = at::randn_like(input);
    const Outcome want = run(reference, input, want_params, grad);
    const Outcome got = run(fused, input, got_params, grad);
    auto differing = [](const at::Tensor& a, const at::Tensor& b) {
      return a.ne(b).to(at::kDouble).mean().item<double>();
    };
    EXPECT_LT(differing(got.output, want.output), 1e-3);
    EXPECT_LT(differing(got.grad_input, want.grad_input), 1e-3);
  }
  // A module converted to bfloat16 as a whole: parameters and their
  // gradients in bfloat16 too.
  expect_matches_reference(
      at::randn({4, 16, 8, 8}).to(at::kBFloat16).contiguous(at::MemoryFormat::ChannelsLast), 2e-2);
}

TEST(BatchNormRelu, GradientsPassTheFiniteDifferenceCheck) {
  at::manual_seed(3);
  const at::Tensor x =
      at::randn({2, 3, 4, 5}, at::kDouble).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor weight = at::rand({3}, at::kDouble) + 0.5;
  const at::Tensor bias = at::rand({3}, at::kDouble) - 0.5;
  // Central differences of sum(y * w) against the analytic gradients.
  const at::Tensor w = at::randn_like(x);
  auto loss = [&](const at::Tensor& in, const at::Tensor& g, const at::Tensor& b) {
    return (k::batch_norm_relu(in, g, b, at::Tensor(), at::Tensor(), 0.1, 1e-5) * w)
        .sum()
        .item<double>();
  };
  const at::Tensor xv = x.clone().requires_grad_();
  const at::Tensor gv = weight.clone().requires_grad_();
  const at::Tensor bv = bias.clone().requires_grad_();
  (k::batch_norm_relu(xv, gv, bv, at::Tensor(), at::Tensor(), 0.1, 1e-5) * w).sum().backward();
  const double h = 1e-6;
  auto check = [&](const at::Tensor& param, const at::Tensor& analytic, const char* name) {
    const at::Tensor flat = param.view(-1);
    for (int64_t i = 0; i < flat.numel(); i += 7) {
      const double original = flat[i].item<double>();
      flat[i].fill_(original + h);
      const double up = loss(x, weight, bias);
      flat[i].fill_(original - h);
      const double down = loss(x, weight, bias);
      flat[i].fill_(original);
      EXPECT_NEAR(analytic.reshape(-1)[i].item<double>(), (up - down) / (2 * h), 1e-6)
          << name << "[" << i << "]";
    }
  };
  // x is channels-last: view(-1) walks its memory, analytic (channels-last
  // too) is read the same way through its contiguous copy in that layout.
  check(x.permute({0, 2, 3, 1}), xv.grad().permute({0, 2, 3, 1}).contiguous(), "input");
  check(weight, gv.grad(), "weight");
  check(bias, bv.grad(), "bias");
}

TEST(BatchNormRelu, GradientInAnotherLayoutGivesTheSameResult) {
  at::manual_seed(4);
  const at::Tensor input = at::randn({2, 6, 5, 4}).contiguous(at::MemoryFormat::ChannelsLast);
  Params a = make_params(6, at::kFloat);
  Params b = copy(a);
  const at::Tensor grad = at::randn({2, 6, 5, 4});  // contiguous, not channels-last
  const Outcome contiguous_grad = run(fused, input, a, grad);
  const Outcome channels_last_grad =
      run(fused, input, b, grad.contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(at::equal(contiguous_grad.grad_input, channels_last_grad.grad_input));
  EXPECT_TRUE(at::equal(contiguous_grad.grad_weight, channels_last_grad.grad_weight));
}

TEST(BatchNormRelu, ResultsDoNotDependOnTheThreadCount) {
  at::manual_seed(5);
  const at::Tensor input =
      at::randn({8, 16, 64, 16}).contiguous(at::MemoryFormat::ChannelsLast);  // 32 blocks
  const at::Tensor grad = at::randn_like(input);
  const int threads = at::get_num_threads();
  std::vector<Outcome> runs;
  for (const int n : {1, 2, 3}) {
    at::set_num_threads(n);
    at::manual_seed(6);
    Params p = make_params(16, at::kFloat);
    runs.push_back(run(fused, input, p, grad));
  }
  at::set_num_threads(threads);
  for (size_t i = 1; i < runs.size(); ++i) {
    EXPECT_TRUE(at::equal(runs[0].output, runs[i].output));
    EXPECT_TRUE(at::equal(runs[0].grad_input, runs[i].grad_input));
    EXPECT_TRUE(at::equal(runs[0].grad_weight, runs[i].grad_weight));
  }
}

TEST(BatchNormRelu, VectorBuildsGiveTheSameBits) {
  const std::vector<std::string> builds = dtrain::testing::cpu_vector_builds();
  if (builds.size() < 2) {
    GTEST_SKIP() << "this CPU runs only the baseline loops";
  }
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    at::manual_seed(8);
    // 37 channels: whole AVX-512, AVX2 and SSE vectors, and a remainder.
    const at::Tensor input =
        at::randn({4, 37, 30, 9}).to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor grad = at::randn_like(input);
    std::vector<Outcome> runs;
    for (const std::string& build : builds) {
      dtrain::testing::ScopedEnv forced("DTRAIN_CPU_BATCH_NORM_RELU", build.c_str());
      at::manual_seed(9);
      Params p = make_params(37, at::kFloat);
      runs.push_back(run(fused, input, p, grad));
    }
    for (size_t i = 1; i < runs.size(); ++i) {
      SCOPED_TRACE(builds[i]);
      EXPECT_TRUE(at::equal(runs[0].output, runs[i].output));
      EXPECT_TRUE(at::equal(runs[0].grad_input, runs[i].grad_input));
      EXPECT_TRUE(at::equal(runs[0].grad_weight, runs[i].grad_weight));
      EXPECT_TRUE(at::equal(runs[0].grad_bias, runs[i].grad_bias));
    }
  }
}

TEST(BatchNormRelu, AnUnknownPassesSettingIsNamed) {
  dtrain::testing::ScopedEnv forced("DTRAIN_CPU_BATCH_NORM_RELU", "sse4");
  Params p = make_params(4, at::kFloat);
  try {
    fused(at::randn({3, 4}), p);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "DTRAIN_CPU_BATCH_NORM_RELU must be auto, baseline, avx2 or avx512, got 'sse4'"),
              std::string::npos)
        << e.what();
  }
}

TEST(BatchNormRelu, NaNPropagatesAsThroughRelu) {
  at::manual_seed(7);
  at::Tensor input = at::randn({4, 3, 2, 2}).contiguous(at::MemoryFormat::ChannelsLast);
  input.select(1, 1).select(1, 0).select(1, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  Params p = make_params(3, at::kFloat);
  const at::Tensor y = fused(input, p);
  // Channel 1's statistics are NaN, so all of it is; the other channels are not.
  EXPECT_TRUE(y.select(1, 1).isnan().all().item<bool>());
  EXPECT_FALSE(y.select(1, 0).isnan().any().item<bool>());
  EXPECT_TRUE(p.running_mean[1].isnan().item<bool>());
}

TEST(BatchNormRelu, UnsupportedInputsAreNamed) {
  Params p = make_params(4, at::kFloat);
  auto call = [&](const at::Tensor& x) { return fused(x, p); };
  auto message = [&](const at::Tensor& x) -> std::string {
    try {
      call(x);
    } catch (const c10::Error& e) {
      return e.what_without_backtrace();
    }
    return "no error";
  };
  EXPECT_FALSE(k::batch_norm_relu_supports(at::randn({2, 4, 3, 3})));
  EXPECT_NE(message(at::randn({2, 4, 3, 3})).find("channels (dim 1) innermost"), std::string::npos);
  EXPECT_NE(message(at::randn({2, 4, 3, 3}, at::kHalf).contiguous(at::MemoryFormat::ChannelsLast))
                .find("float32, float64 or bfloat16, got Half"),
            std::string::npos);
  Params doubles = make_params(4, at::kDouble);
  try {
    k::batch_norm_relu(at::randn({2, 4}), doubles.weight, doubles.bias, at::Tensor(), at::Tensor(),
                       0.1, 1e-5);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace())
                  .find("weight must be Float for Float input, got Double"),
              std::string::npos)
        << e.what_without_backtrace();
  }
  EXPECT_NE(message(at::randn({1, 4})).find("more than 1 value per channel"), std::string::npos);
  EXPECT_NE(message(at::randn({2, 5})).find("weight must have shape (C,) = (5,)"),
            std::string::npos);
  EXPECT_TRUE(k::batch_norm_relu_supports(at::randn({2, 4})));
  try {
    k::batch_norm_relu(at::randn({2, 4}), p.weight, p.bias, p.running_mean, at::Tensor(), 0.1,
                       1e-5);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("running_mean and running_var"),
              std::string::npos);
  }
}

}  // namespace

// dtrain::kernels::count_correct on CPU against a brute-force reference.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "dtrain/kernels/metrics.h"

namespace {

// The reference: first maximum wins, NaN is the largest value.
int64_t reference_count(const at::Tensor& logits, const at::Tensor& labels) {
  const at::Tensor values = logits.to(at::kDouble);
  int64_t correct = 0;
  for (int64_t i = 0; i < values.size(0); ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < values.size(1); ++j) {
      const double current = values[i][best].item<double>();
      const double candidate = values[i][j].item<double>();
      if (std::isnan(current)) {
        break;
      }
      if (candidate > current || std::isnan(candidate)) {
        best = j;
      }
    }
    correct += best == labels[i].item<int64_t>();
  }
  return correct;
}

class CountCorrectDtypes : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(CountCorrectDtypes, MatchesReferenceOnRandomLogits) {
  at::manual_seed(1);
  const at::Tensor logits = at::randn({3000, 10}).to(GetParam());
  const at::Tensor labels = at::randint(0, 10, {3000}, at::TensorOptions().dtype(at::kLong));
  const int64_t got = dtrain::kernels::count_correct(logits, labels).item<int64_t>();
  EXPECT_EQ(got, reference_count(logits, labels));
  // It also agrees with ATen's argmax, the thing users compare against.
  EXPECT_EQ(got, logits.argmax(1).eq(labels).sum().item<int64_t>());
}

INSTANTIATE_TEST_SUITE_P(CountCorrect, CountCorrectDtypes,
                         ::testing::Values(at::kFloat, at::kDouble, at::kHalf, at::kBFloat16));

TEST(CountCorrect, TiesGoToLowestIndexAndNanIsLargest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor logits = at::tensor({1.f, 3.f, 3.f,   // tie: argmax 1
                                        nan, 5.f, 9.f,   // NaN first: argmax 0
                                        2.f, nan, 9.f,   // NaN wins over 9: argmax 1
                                        0.f, 0.f, 0.f})  // all equal: argmax 0
                                .view({4, 3});
  const at::Tensor labels = at::tensor({1, 0, 1, 0}, at::TensorOptions().dtype(at::kLong));
  EXPECT_EQ(dtrain::kernels::count_correct(logits, labels).item<int64_t>(), 4);
  const at::Tensor wrong = at::tensor({2, 2, 2, 1}, at::TensorOptions().dtype(at::kLong));
  EXPECT_EQ(dtrain::kernels::count_correct(logits, wrong).item<int64_t>(), 0);
}

TEST(CountCorrect, NonContiguousAndEmpty) {
  const at::Tensor logits = at::randn({10, 6}).t();  // (6, 10), strided
  const at::Tensor labels = at::randint(0, 10, {6}, at::TensorOptions().dtype(at::kLong));
  EXPECT_EQ(dtrain::kernels::count_correct(logits, labels).item<int64_t>(),
            reference_count(logits, labels));
  EXPECT_EQ(dtrain::kernels::count_correct(at::randn({0, 4}),
                                           at::zeros({0}, at::TensorOptions().dtype(at::kLong)))
                .item<int64_t>(),
            0);
}

// Expects a c10::Error whose message contains `fragment`.
void expect_rejected(const at::Tensor& logits, const at::Tensor& labels,
                     const std::string& fragment) {
  try {
    dtrain::kernels::count_correct(logits, labels);
    FAIL() << "bad input accepted; expected: " << fragment;
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(CountCorrect, BadInputsNameTheArgument) {
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  expect_rejected(at::randn({4}), at::zeros({4}, long_options), "logits must be 2-D (B, C)");
  expect_rejected(at::randn({4, 0}), at::zeros({4}, long_options), "at least one class");
  expect_rejected(at::zeros({4, 3}, long_options), at::zeros({4}, long_options),
                  "logits must be float32, float64, float16 or bfloat16, got Long");
  expect_rejected(at::randn({4, 3}), at::zeros({5}, long_options), "labels must have shape (4,)");
  expect_rejected(at::randn({4, 3}), at::zeros({4}), "labels must be int64, got Float");
}

}  // namespace

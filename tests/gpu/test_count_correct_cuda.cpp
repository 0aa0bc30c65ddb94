// dtrain::kernels::count_correct on CUDA, against the CPU kernel. Skips,
// saying why, where no CUDA device is visible.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include "dtrain/config.h"
#include "dtrain/kernels/metrics.h"

namespace {

class CountCorrectCuda : public ::testing::TestWithParam<at::ScalarType> {
 protected:
  void SetUp() override {
    if (!DTRAIN_WITH_CUDA) {
      GTEST_SKIP() << "dtrain was built without CUDA (DTRAIN_CUDA=OFF or no nvcc)";
    }
    if (!at::hasCUDA()) {
      GTEST_SKIP() << "no CUDA device visible";
    }
  }
};

TEST_P(CountCorrectCuda, AgreesWithCpuExactly) {
  at::manual_seed(7);
  for (int64_t rows : {0, 1, 255, 256, 257, 100000}) {
    const at::Tensor logits = at::randn({rows, 40}).to(GetParam());
    const at::Tensor labels = at::randint(0, 40, {rows}, at::TensorOptions().dtype(at::kLong));
    const at::Tensor on_gpu =
        dtrain::kernels::count_correct(logits.to(at::kCUDA), labels.to(at::kCUDA));
    EXPECT_TRUE(on_gpu.is_cuda());
    EXPECT_EQ(on_gpu.item<int64_t>(),
              dtrain::kernels::count_correct(logits, labels).item<int64_t>())
        << rows << " rows";
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, CountCorrectCuda,
                         ::testing::Values(at::kFloat, at::kDouble, at::kHalf, at::kBFloat16));

TEST(CountCorrectCudaDevices, MixedDevicesAreRejected) {
  if (!DTRAIN_WITH_CUDA || !at::hasCUDA()) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  EXPECT_THROW(dtrain::kernels::count_correct(at::randn({4, 3}).to(at::kCUDA),
                                              at::zeros({4}, at::TensorOptions().dtype(at::kLong))),
               c10::Error);
}

}  // namespace

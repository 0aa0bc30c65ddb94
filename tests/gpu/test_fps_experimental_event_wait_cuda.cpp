// event_done_within (kernels/experimental/src/cuda/event_wait.h), which
// keeps the experimental measured FPS choice from waiting forever on a
// kernel that never finishes: work a stream cannot finish (a host function
// blocked on a flag) is reported as not done once the limit passes, and
// done once it is let go; a "not ready" poll leaves no error behind for the
// next launch check.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "cuda/event_wait.h"

namespace {

using dtrain::kernels::cuda::experimental::event_done_within;
using namespace std::chrono_literals;

// Holds the stream's work at a host function until released.
struct Gate {
  std::atomic<bool> open{false};
  static void CUDART_CB wait(void* self) {
    auto* gate = static_cast<Gate*>(self);
    while (!gate->open.load()) {
    }
  }
};

TEST(ExperimentalEventWaitCuda, GivesUpOnWorkThatDoesNotFinishAndSeesItFinishOnceLetGo) {
  if (!at::hasCUDA()) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(stream, &Gate::wait, &gate), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, stream), cudaSuccess);

  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(event_done_within(done, 200ms));
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s) << "the limit ends the wait";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "polling left an error for the next check";

  gate.open = true;
  EXPECT_TRUE(event_done_within(done, 30s));
  EXPECT_TRUE(event_done_within(done, 0ms)) << "a completed event is done at once";
  EXPECT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace

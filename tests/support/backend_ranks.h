// Multi-process tests on a default group of one backend: Gloo ranks on the
// CPU, or NCCL ranks that share GPU 0, each its own host to NCCL
// (dtrain/dist/shared_gpu.h). Each rank is a forked process
// (multi_process.h) that joins the group through tcp:// on loopback.
//
//   const auto backend = dtrain::testing::nccl_on_shared_gpu();
//   if (!backend.available()) GTEST_SKIP() << backend.missing;
//   dtrain::testing::run_backend_ranks(backend, 3, [](int rank, int world, c10::Device device) {
//     at::Tensor t = at::ones({2}, device);
//     dtrain::dist::all_reduce(t);
//   });
//
// A process whose parent has started CUDA cannot use CUDA, so the parent
// never does: whether a GPU is visible is asked in a child of its own.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "dtrain/config.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/process_setup.h"
#include "multi_process.h"

namespace dtrain::testing {

struct RankBackend {
  std::string name;  // "gloo" or "nccl"
  c10::Device device = c10::kCPU;
  std::string missing;  // why this backend cannot run here; empty when it can
  bool available() const { return missing.empty(); }
};

// Whether this machine shows a CUDA device, asked once, in a child process.
inline bool cuda_visible_from_a_child() {
  static const bool visible = [] {
    const pid_t child = ::fork();
    if (child == 0) {
      ::_exit(at::hasCUDA() ? 0 : 1);
    }
    int status = 0;
    return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
  }();
  return visible;
}

inline RankBackend gloo_on_cpu() {
  return {"gloo", c10::kCPU, ""};
}

inline RankBackend nccl_on_shared_gpu() {
#if DTRAIN_WITH_CUDA
  const bool gpu = cuda_visible_from_a_child();
  return {"nccl", c10::Device(c10::kCUDA, 0), gpu ? "" : "no CUDA device visible"};
#else
  return {"nccl", c10::Device(c10::kCUDA, 0), "this build of dtrain has no CUDA"};
#endif
}

// Starts the default group for `rank` through tcp:// on `port`, with one
// intra-op thread (ranks share the machine's cores). The rank writes a
// crash trace if it dies, as dtrain's programs do (util::set_up_process).
inline void init_backend_group(const RankBackend& backend, int rank, int world, std::uint16_t port,
                               std::chrono::seconds timeout) {
  util::set_up_process(util::ProcessSetup().logging(false).retain_freed_host_memory(false));
  at::set_num_threads(1);
  if (backend.device.is_cuda()) {
    ::setenv(util::kShareGpuVariable, "1", 1);  // read by init_process_group
  }
  dist::init_process_group({.backend = backend.name,
                            .init_method = "tcp://127.0.0.1:" + std::to_string(port),
                            .rank = rank,
                            .world_size = world,
                            .timeout = timeout});
}

// Fails the test for every rank that exited non-zero (its output is above).
inline void expect_all_ranks_pass(const std::vector<int>& codes) {
  for (std::size_t r = 0; r < codes.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << "rank " << r << " failed (its output is above)";
  }
}

// Runs body(rank, world, device) on `world` ranks of `backend`, each with
// the group's collectives limited to `timeout`, and expects all to pass;
// a rank still running at twice the timeout (and a minute) is killed.
template <typename Body>
void run_backend_ranks(const RankBackend& backend, int world, std::chrono::seconds timeout,
                       Body body) {
  const auto port = free_port();
  expect_all_ranks_pass(run_ranks(
      world,
      [&](int rank) {
        init_backend_group(backend, rank, world, port, timeout);
        body(rank, world, backend.device);
        dist::destroy_process_group();
      },
      2 * timeout + std::chrono::seconds(60)));
}

}  // namespace dtrain::testing

// Multi-process tests on a Gloo default group over loopback: each rank is
// a forked process (multi_process.h) that joins the group through tcp://.
//
//   dtrain::testing::run_gloo_ranks(3, [](int rank, int world) {
//     at::Tensor t = at::ones({2});
//     dtrain::dist::all_reduce(t);
//     EXPECT_EQ(t[0].item<float>(), world);
//   });
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "backend_ranks.h"
#include "dtrain/dist/init.h"

namespace dtrain::testing {

// Starts the default group for `rank` through tcp:// on `port`, with one
// intra-op thread (ranks share the machine's cores).
inline void init_gloo_group(int rank, int world, std::uint16_t port,
                            std::chrono::seconds timeout = std::chrono::seconds(60)) {
  init_backend_group(gloo_on_cpu(), rank, world, port, timeout);
}

// True when `value` is the same on every rank of the default group (a
// collective: every rank must call it).
inline bool same_on_all_ranks(const at::Tensor& value) {
  at::Tensor low = value.clone();
  at::Tensor high = value.clone();
  dist::all_reduce(low, dist::ReduceOp::kMin);
  dist::all_reduce(high, dist::ReduceOp::kMax);
  return at::equal(low, high);
}

// Runs body(rank, world) on `world` Gloo ranks and expects all to pass.
template <typename Body>
void run_gloo_ranks(int world, Body body, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const auto port = free_port();
  expect_all_ranks_pass(run_ranks(world, [&](int rank) {
    init_gloo_group(rank, world, port, timeout);
    body(rank, world);
    dist::destroy_process_group();
  }));
}

// The same with another timeout, given before the body so that the body
// stays the last argument.
template <typename Body>
void run_gloo_ranks(int world, std::chrono::seconds timeout, Body body) {
  run_gloo_ranks(world, body, timeout);
}

}  // namespace dtrain::testing

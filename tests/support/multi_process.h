// Runs one function as several ranks, each in its own forked process, for
// tests of the distributed runtime on one machine. GoogleTest assertions
// may be used inside: a rank with a failed assertion or an exception exits
// non-zero, and its output (stdout/stderr are shared) says why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace dtrain::testing {

// Exit code of each rank, in rank order; a rank still running at the
// deadline is killed and reported as 128 + SIGKILL.
std::vector<int> run_ranks(int world_size, const std::function<void(int rank)>& body,
                           std::chrono::seconds deadline = std::chrono::seconds(120));

// A TCP port, below the kernel's ephemeral range, that was free a moment ago
// (dtrain::store::net::free_port, which dtrun uses for its jobs' stores).
std::uint16_t free_port();

}  // namespace dtrain::testing

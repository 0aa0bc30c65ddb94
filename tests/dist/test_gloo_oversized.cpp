// Note [A message larger than its receive] (sdk/src/dist/process_group_gloo.cpp)
// on forked Gloo ranks: libgloo ends a rank that is sent more bytes than
// its tensor holds, and the rank's last lines say why, with its rank and
// both sizes, rather than libgloo's check alone.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/logging.h"
#include "dtrain/util/process_setup.h"
#include "gloo_ranks.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dtrain::testing::ChildEnd;

// Runs body(rank) on two Gloo ranks inside a child whose stderr is kept;
// the child succeeds when rank 1 died of SIGABRT and rank 0 ended either
// way (its peer is gone: an error, or its send just completed).
template <typename Body>
ChildEnd run_two_ranks_expecting_rank_1_to_abort(Body body) {
  return dtrain::testing::run_in_child([&] {
    const auto port = dtrain::testing::free_port();
    const std::vector<int> codes = dtrain::testing::run_ranks(
        2,
        [&](int rank) {
          // The rank's last lines come from the crash traces, which a
          // program sets up (dtrain's programs do).
          dtrain::util::set_up_process();
          dtrain::testing::init_gloo_group(rank, 2, port, 20s);
          dtrain::util::set_log_rank(rank, rank);
          try {
            body(rank);
          } catch (const std::exception&) {
            // rank 0 learns that rank 1 is gone; that error is not under test
          }
        },
        60s);
    return codes.size() == 2 && codes[1] == 128 + SIGABRT;
  });
}

void expect_named(const ChildEnd& end, const std::string& words) {
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0)
      << "rank 1 did not die of SIGABRT; output:\n"
      << end.stderr_text;
  EXPECT_NE(end.stderr_text.find(words), std::string::npos) << end.stderr_text;
}

TEST(GlooOversized, ARecvIntoASmallerTensorSaysWhyTheRankEnded) {
  const ChildEnd end = run_two_ranks_expecting_rank_1_to_abort([](int rank) {
    if (rank == 0) {
      dist::send(at::ones({5}), 1, nullptr, 3);
    } else {
      at::Tensor smaller = at::empty({4});
      dist::recv(smaller, 0, nullptr, 3);
    }
  });
  expect_named(end, "[rank 1/local 1] terminate: uncaught gloo::EnforceNotMet: ");
  expect_named(end,
               "[rank 1/local 1] a Gloo message of 20 bytes arrived where this rank had room for "
               "16: a recv's tensor is smaller than the sender's");
}

// The same fault inside a collective: tensors of different sizes on two
// ranks (which DTRAIN_DIST_DEBUG=1 would have refused before sending).
TEST(GlooOversized, ABroadcastOfDifferentSizesSaysWhyTheRankEnded) {
  const ChildEnd end = run_two_ranks_expecting_rank_1_to_abort([](int rank) {
    at::Tensor values = rank == 0 ? at::ones({6}) : at::empty({3});
    dist::broadcast(values, 0);
  });
  expect_named(end,
               "[rank 1/local 1] a Gloo message of 24 bytes arrived where this rank had "
               "room for 12: ");
  expect_named(end, "this rank's tensor in a collective is smaller than another rank's");
}

}  // namespace

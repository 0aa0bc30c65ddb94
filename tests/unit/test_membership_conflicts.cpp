// Note [A conflict at rendezvous] (sdk/src/dist/membership.cpp), with the
// arrival order fixed, over a real TCP store: the process that finds the
// conflict may be the store's host, which must not take the store away
// before the ranks waiting on it have read why.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "dist/membership.h"
#include "dtrain/store/tcp_store.h"

namespace {

using namespace std::chrono_literals;
using dtrain::dist::MemberOptions;
using dtrain::store::TcpStore;
using dtrain::store::TcpStoreOptions;
using Clock = std::chrono::steady_clock;

MemberOptions member(int rank, int world_size) {
  return {.rank = rank, .world_size = world_size, .build = "one build", .timeout = 30s};
}

// The error check_membership raises, or "" when it returns.
std::string membership_error(TcpStore& store, const MemberOptions& me) {
  try {
    dtrain::dist::check_membership(store, me);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Rank 1 (world size 3) starts joining; as soon as its first record is in
// the store, rank 0, which hosts the store, comes with world size 2, raises
// and closes the store. Rank 1 still learns the conflict, not that the
// store went away, and at once: it counted as joining before its first
// record, so the host waited for it.
TEST(MembershipConflict, TheHostFindingItLetsTheWaitingRanksReadIt) {
  auto host = std::make_unique<TcpStore>(TcpStoreOptions().port(0).is_server(true).timeout(30s));
  const std::uint16_t port = host->port();
  const auto start = Clock::now();
  std::string waiting_error;
  std::thread waiting([&] {
    TcpStore store(TcpStoreOptions().port(port).timeout(30s));
    waiting_error = membership_error(store, member(1, 3));
  });
  TcpStore(TcpStoreOptions().port(port).timeout(30s)).wait({"world_size"}, 30s);
  MemberOptions rank_zero = member(0, 2);
  rank_zero.hosts_store = true;
  const std::string host_error = membership_error(*host, rank_zero);
  host.reset();  // as a failed init_process_group drops its store
  waiting.join();
  const std::string conflict =
      "the job's ranks disagree: rank 0 was started with world size 2, rank 1 with world size 3; "
      "start every process with the same world size";
  EXPECT_EQ(host_error, "init_process_group: rank 0: " + conflict);
  EXPECT_EQ(waiting_error, "init_process_group: rank 1: " + conflict);
  EXPECT_LT(Clock::now() - start, 10s);
}

// A world size no process of this job brought (a previous job's record in
// a reused store) is named as the store's.
TEST(MembershipConflict, AWorldSizeNoRankBroughtIsTheStores) {
  TcpStore store(TcpStoreOptions().port(0).is_server(true).timeout(30s));
  store.set("world_size", "4");
  MemberOptions me = member(1, 2);
  me.stale_hint = " (or the store is a previous job's)";
  EXPECT_EQ(membership_error(store, me),
            "init_process_group: rank 1: the job's ranks disagree: rank 1 was started with world "
            "size 2, but the store holds world size 4 (from another rank, or a previous job); "
            "start every process with the same world size (or the store is a previous job's)");
}

}  // namespace

// The rendezvous protocol (Note [Rounds] in dtrain/launch/rendezvous.h)
// with agents as threads sharing one TcpStore server.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "dtrain/launch/rendezvous.h"
#include "dtrain/store/prefix_store.h"
#include "dtrain/store/tcp_store.h"
#include "dtrain/util/errors.h"
#include "heartbeats.h"

namespace {

using namespace dtrain::launch;
using namespace std::chrono_literals;
namespace store = dtrain::store;

class RendezvousTest : public ::testing::Test {
 protected:
  RendezvousTest() : server_(0) {}

  std::unique_ptr<Rendezvous> agent(RendezvousSettings settings) {
    auto store = std::make_shared<store::TcpStore>(
        store::TcpStoreOptions().host("127.0.0.1").port(server_.port()).timeout(10s));
    settings.poll_interval = 10ms;
    return std::make_unique<Rendezvous>(std::make_shared<store::PrefixStore>("job", store),
                                        settings);
  }
  static JoinResult join(Rendezvous& r, int node_rank, int nproc = 1) {
    return r.join(
        [=] {
          NodeInfo info;
          info.addr = "10.0.0." + std::to_string(node_rank + 1);
          info.master_port = static_cast<std::uint16_t>(1000 + node_rank);
          info.nproc = nproc;
          info.node_rank = node_rank;
          info.host = "node" + std::to_string(node_rank);
          return info;
        },
        [] { return false; });
  }

  store::TcpStoreServer server_;
};

TEST_F(RendezvousTest, StaticRoundsOrderNodesByNodeRank) {
  RendezvousSettings settings;
  settings.nnodes = {3, 3};
  settings.order_by_node_rank = true;
  std::vector<std::future<JoinResult>> joins;
  for (int node : {2, 0, 1}) {
    joins.push_back(std::async(std::launch::async, [&, node] {
      auto r = agent(settings);
      return join(*r, node, node + 1);
    }));
  }
  std::vector<int> group_ranks;
  for (auto& f : joins) {
    const JoinResult result = f.get();
    ASSERT_TRUE(result.membership.has_value());
    const Membership& m = *result.membership;
    EXPECT_EQ(m.round, 0);
    EXPECT_EQ(m.restarts, 0);
    ASSERT_EQ(m.nodes.size(), 3u);
    EXPECT_EQ(m.nodes[0].host, "node0");
    EXPECT_EQ(m.nodes[2].host, "node2");
    EXPECT_EQ(m.world_size(), 6);  // 1 + 2 + 3 workers
    EXPECT_EQ(m.first_rank(2), 3);
    group_ranks.push_back(m.group_rank);
  }
  EXPECT_EQ(group_ranks, (std::vector<int>{2, 0, 1}));
}

TEST_F(RendezvousTest, ElasticRoundStartsWithMinAndTheLateNodeWaitsForTheNext) {
  RendezvousSettings settings;
  settings.nnodes = {1, 2};
  settings.last_call_timeout = 100ms;
  auto first = agent(settings);
  const JoinResult alone = join(*first, 0);
  ASSERT_TRUE(alone.membership.has_value());
  EXPECT_EQ(alone.membership->nodes.size(), 1u);

  auto late_agent = agent(settings);
  auto late = std::async(std::launch::async, [&] { return join(*late_agent, 1); });
  // The running agent sees the waiting one, and ends round 0 to admit it.
  ASSERT_TRUE([&] {
    for (int i = 0; i < 200; ++i) {
      if (first->waiting(0, 1) > 0) {
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }());
  first->settle(0, {Outcome::Kind::kRejoin, 0, "a node is waiting"});
  const JoinResult both = join(*first, 0);
  const JoinResult late_result = late.get();
  ASSERT_TRUE(both.membership && late_result.membership);
  EXPECT_EQ(both.membership->round, 1);
  EXPECT_EQ(late_result.membership->round, 1);
  EXPECT_EQ(both.membership->nodes.size(), 2u);
  EXPECT_EQ(both.membership->group_rank + late_result.membership->group_rank, 1);
}

TEST_F(RendezvousTest, TheFirstOutcomeHoldsAndCarriesTheRestartCount) {
  RendezvousSettings settings;
  settings.nnodes = {1, 1};
  auto r = agent(settings);
  ASSERT_TRUE(join(*r, 0).membership);
  const Outcome held = r->settle(0, {Outcome::Kind::kFailed, 1, "rank 0 failed"});
  EXPECT_EQ(held.kind, Outcome::Kind::kFailed);
  const Outcome second = r->settle(0, {Outcome::Kind::kDone, 0, "late"});
  EXPECT_EQ(second.kind, Outcome::Kind::kFailed);
  EXPECT_EQ(second.text, "rank 0 failed");
  const JoinResult next = join(*r, 0);
  ASSERT_TRUE(next.membership);
  EXPECT_EQ(next.membership->round, 1);
  EXPECT_EQ(next.membership->restarts, 1);
  // A job that ended tells agents arriving afterwards, instead of admitting them.
  r->settle(1, {Outcome::Kind::kDone, 1, "every worker exited 0"});
  auto newcomer = agent(settings);
  const JoinResult after = join(*newcomer, 0);
  EXPECT_FALSE(after.membership.has_value());
  ASSERT_TRUE(after.final_outcome.has_value());
  EXPECT_EQ(after.final_outcome->kind, Outcome::Kind::kDone);
}

TEST_F(RendezvousTest, TooFewNodesTimeOutNamingTheCount) {
  RendezvousSettings settings;
  settings.nnodes = {2, 3};
  settings.join_timeout = 200ms;
  auto r = agent(settings);
  try {
    join(*r, 0);
    FAIL() << "join did not time out";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than 2 node(s) (--nnodes 2:3)"), std::string::npos)
        << e.what();
  }
}

TEST_F(RendezvousTest, EncodingsRoundTrip) {
  NodeInfo info{"10.1.2.3", 555, 4, 2, "host-a", true, "dtrain 0.1.0 (source 1a), LibTorch 2.11.0"};
  const NodeInfo back = decode_node_info(encode(info));
  EXPECT_TRUE(back.store_host);
  EXPECT_EQ(back.addr, "10.1.2.3");
  EXPECT_EQ(back.master_port, 555);
  EXPECT_EQ(back.nproc, 4);
  EXPECT_EQ(back.node_rank, 2);
  EXPECT_EQ(back.host, "host-a");
  EXPECT_EQ(back.build, info.build);
  // A record from a dtrun that did not yet say its build.
  const NodeInfo older = decode_node_info("10.1.2.4\n556\n1\n0\n0\nhost-b");
  EXPECT_EQ(older.host, "host-b");
  EXPECT_EQ(older.build, "");
  const Outcome outcome =
      decode_outcome(encode(Outcome{Outcome::Kind::kLost, 3, "node 1\nsilent"}));
  EXPECT_EQ(outcome.kind, Outcome::Kind::kLost);
  EXPECT_EQ(outcome.next_restarts, 3);
  EXPECT_EQ(outcome.text, "node 1\nsilent");
  EXPECT_THROW(decode_outcome("bogus\n1\nx"), dtrain::Error);
}

}  // namespace

namespace {

TEST_F(RendezvousTest, NodesOfDifferentBuildsAreNamedWithTheirBuilds) {
  auto node = [](const std::string& host, const std::string& build) {
    NodeInfo info;
    info.host = host;
    info.build = build;
    return info;
  };
  const std::string a = "dtrain 0.1.0 (source 1a), LibTorch 2.11.0";
  const std::string b = "dtrain 0.1.0 (source 2b), LibTorch 2.11.0";
  EXPECT_EQ(builds_disagreement({node("h0", a), node("h1", a)}), std::nullopt);
  const auto mixed = builds_disagreement({node("h0", a), node("h1", b), node("h2", a)});
  ASSERT_TRUE(mixed.has_value());
  EXPECT_NE(mixed->find("the nodes' dtrun agents run different builds of dtrain: node 0 (h0), "
                        "node 2 (h2) \"" +
                        a + "\"; node 1 (h1) \"" + b + "\""),
            std::string::npos)
      << *mixed;
  EXPECT_NE(mixed->find("DTRAIN_ALLOW_MIXED_BUILDS=1"), std::string::npos) << *mixed;
  const auto older = builds_disagreement({node("h0", a), node("h1", "")});
  ASSERT_TRUE(older.has_value());
  EXPECT_NE(older->find("node 1 (h1) an older dtrun, which does not say its build"),
            std::string::npos)
      << *older;
}

TEST_F(RendezvousTest, HeartbeatsNameAPeerThatWentSilent) {
  RendezvousSettings settings;
  auto a = agent(settings);
  auto b = agent(settings);
  Heartbeats watch_a(*a, 0, 0, 2, 0ms, 150ms);
  Heartbeats watch_b(*b, 0, 1, 2, 0ms, 150ms);
  // Both beat: nobody is silent, however long it runs.
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(watch_a.beat_and_check(Heartbeats::Clock::now()).has_value());
    EXPECT_FALSE(watch_b.beat_and_check(Heartbeats::Clock::now()).has_value());
    std::this_thread::sleep_for(15ms);
  }
  // b stops: a names it once the timeout has passed, not before. The check
  // that last sees b's count runs at `stopped` itself, so the timeout counts
  // from there (a clock read after it would start the count late).
  const auto stopped = Heartbeats::Clock::now();
  EXPECT_FALSE(watch_a.beat_and_check(stopped).has_value());
  std::optional<int> silent;
  while (!silent && Heartbeats::Clock::now() - stopped < 2s) {
    std::this_thread::sleep_for(10ms);
    silent = watch_a.beat_and_check(Heartbeats::Clock::now());
  }
  ASSERT_TRUE(silent.has_value());
  EXPECT_EQ(*silent, 1);
  EXPECT_GE(Heartbeats::Clock::now() - stopped, 150ms);
}

}  // namespace

// The build a process reports (util::build_info) and init_process_group's
// check that every rank of a job runs the same one (Note [One build per job]
// in sdk/src/dist/membership.h), run here by threads over a real TCP store.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "dist/membership.h"
#include "dtrain/config.h"
#include "dtrain/store/tcp_store.h"
#include "dtrain/util/build_info.h"
#include "expect_error.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using dtrain::dist::MemberOptions;
using dtrain::store::TcpStore;
using dtrain::store::TcpStoreOptions;

const std::string kBuildA = "dtrain 0.1.0 (source aaaaaaaaaaaa), LibTorch 2.11.0";
const std::string kBuildB = "dtrain 0.1.0 (source bbbbbbbbbbbb), LibTorch 2.10.0";

std::vector<MemberOptions> members_running(const std::vector<std::string>& builds,
                                           bool allow_mixed = false) {
  std::vector<MemberOptions> members;
  for (size_t rank = 0; rank < builds.size(); ++rank) {
    members.push_back({.rank = static_cast<int>(rank),
                       .world_size = static_cast<int>(builds.size()),
                       .build = builds[rank],
                       .allow_mixed_builds = allow_mixed,
                       .timeout = 20s});
  }
  return members;
}

// Joins `members`, one thread each, as init_process_group does: rank 0
// hosts the TCP store, and closes it the moment its own check throws (a
// rank 0 that joined keeps it, as it goes on to build the group). `first`,
// when set, joins alone until its build is recorded. Returns each rank's
// error message, empty for a rank that joined.
std::vector<std::string> join_members(const std::vector<MemberOptions>& members, int first = -1) {
  auto host = std::make_unique<TcpStore>(TcpStoreOptions().port(0).is_server(true).timeout(20s));
  const std::uint16_t port = host->port();
  std::unique_ptr<TcpStore> kept_host;
  std::vector<std::string> errors(members.size());
  auto run = [&](const MemberOptions& me) {
    std::unique_ptr<TcpStore> store =
        me.rank == 0 ? std::move(host)
                     : std::make_unique<TcpStore>(TcpStoreOptions().port(port).timeout(20s));
    try {
      dtrain::dist::check_membership(*store, me);
      dtrain::dist::check_one_build(*store, me);
    } catch (const std::exception& error) {
      errors[me.rank] = error.what();
      return;
    }
    if (me.rank == 0) {
      kept_host = std::move(store);
    }
  };
  TcpStore watcher(TcpStoreOptions().port(port).timeout(20s));
  std::vector<std::thread> threads;
  if (first >= 0) {
    threads.emplace_back(run, members[first]);
    watcher.wait({"build"}, 20s);
  }
  for (const MemberOptions& me : members) {
    if (me.rank != first) {
      threads.emplace_back(run, me);
    }
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  return errors;
}

TEST(BuildInfo, NamesThisBuildsVersionsAndSources) {
  const dtrain::util::BuildInfo& info = dtrain::util::build_info();
  EXPECT_EQ(info.version, DTRAIN_VERSION_STRING);
  EXPECT_EQ(info.libtorch_version, TORCH_VERSION);
  EXPECT_TRUE(std::regex_match(info.source_revision,
                               std::regex("[0-9a-f]{12}(-dirty(\\.[0-9a-f]{8})?)?|unknown")))
      << info.source_revision;
  EXPECT_EQ(info.cuda, DTRAIN_WITH_CUDA != 0);
  EXPECT_EQ(info.identity(), "dtrain " + info.version + " (source " + info.source_revision +
                                 "), LibTorch " + info.libtorch_version);
  EXPECT_EQ(info.describe(),
            info.identity() + (DTRAIN_WITH_CUDA ? ", with CUDA" : ", without CUDA"));
}

TEST(OneBuildPerJob, RanksOfOneBuildJoin) {
  for (const std::string& error : join_members(members_running({kBuildA, kBuildA, kBuildA}))) {
    EXPECT_EQ(error, "");
  }
}

TEST(OneBuildPerJob, EveryRankNamesTheBuildsAndTheirRanks) {
  const std::vector<std::string> errors =
      join_members(members_running({kBuildA, kBuildA, kBuildB}));
  const std::string expected = "\"" + kBuildA + "\" on ranks 0-1, \"" + kBuildB + "\" on rank 2";
  for (const std::string& error : errors) {
    EXPECT_NE(error.find("run different builds of dtrain"), std::string::npos) << error;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
    EXPECT_NE(error.find("DTRAIN_ALLOW_MIXED_BUILDS=1"), std::string::npos) << error;
  }
  // Every rank, rank 0 (which hosts the store) too, gives the same verdict:
  // no rank lost the store to rank 0 failing first.
  EXPECT_EQ(errors[0], errors[1]);
  EXPECT_EQ(errors[1], errors[2]);
}

TEST(OneBuildPerJob, TheOddBuildArrivingFirstIsCaughtAlike) {
  // Rank 2's build is recorded as the job's first, so ranks 0 and 1 are the
  // ones that see a difference; the verdict names the same split.
  const std::vector<std::string> errors =
      join_members(members_running({kBuildA, kBuildA, kBuildB, kBuildA}), /*first=*/2);
  const std::string expected = "\"" + kBuildA + "\" on ranks 0-1, 3, \"" + kBuildB + "\" on rank 2";
  for (const std::string& error : errors) {
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
}

TEST(OneBuildPerJob, AllowedMixedBuildsJoin) {
  for (const std::string& error :
       join_members(members_running({kBuildA, kBuildB, kBuildB}, /*allow_mixed=*/true))) {
    EXPECT_EQ(error, "");
  }
}

TEST(OneBuildPerJob, RanksNotAllowedFailEvenWhereRankZeroIsAllowed) {
  // DTRAIN_ALLOW_MIXED_BUILDS set on rank 0's node only: rank 0 warns and
  // goes on, the others still get the verdict (not a wait for one).
  std::vector<MemberOptions> members = members_running({kBuildA, kBuildB});
  members[0].allow_mixed_builds = true;
  const std::vector<std::string> errors = join_members(members);
  EXPECT_EQ(errors[0], "");
  EXPECT_NE(errors[1].find("run different builds of dtrain"), std::string::npos) << errors[1];
}

TEST(OneBuildPerJob, ARankWhoseVerdictNeverComesSaysSo) {
  // Rank 0 joins and then gives no verdict (it died with the store hosted
  // elsewhere, as by torchrun's agent): rank 1 fails at its timeout, saying
  // what it was waiting for.
  std::vector<MemberOptions> members = members_running({kBuildA, kBuildB});
  members[1].timeout = 1s;
  dtrain::store::TcpStoreServer server(0);
  TcpStore rank_zero(TcpStoreOptions().port(server.port()).timeout(20s));
  std::string error;
  std::thread rank_one([&] {
    TcpStore store(TcpStoreOptions().port(server.port()).timeout(20s));
    try {
      dtrain::dist::check_membership(store, members[1]);
      dtrain::dist::check_one_build(store, members[1]);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  dtrain::dist::check_membership(rank_zero, members[0]);
  rank_one.join();
  EXPECT_NE(error.find("init_process_group: rank 1 could not learn from the store whether every "
                       "rank runs the same build of dtrain"),
            std::string::npos)
      << error;
}

TEST(OneBuildPerJob, TheEnvironmentsSwitchIsChecked) {
  dtrain::testing::ScopedEnv env("DTRAIN_ALLOW_MIXED_BUILDS", nullptr);
  EXPECT_FALSE(dtrain::util::mixed_builds_allowed());
  env.set("DTRAIN_ALLOW_MIXED_BUILDS", "0");
  EXPECT_FALSE(dtrain::util::mixed_builds_allowed());
  env.set("DTRAIN_ALLOW_MIXED_BUILDS", "1");
  EXPECT_TRUE(dtrain::util::mixed_builds_allowed());
  env.set("DTRAIN_ALLOW_MIXED_BUILDS", "yes");
  dtrain::testing::expect_error([] { dtrain::util::mixed_builds_allowed(); },
                                "DTRAIN_ALLOW_MIXED_BUILDS='yes' is not 0 or 1");
}

}  // namespace

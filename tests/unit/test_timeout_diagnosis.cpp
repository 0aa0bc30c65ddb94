// Note [Which rank a timeout waited on] (sdk/src/dist/timeout_diagnosis.h)
// in one process: the reports of the other ranks are written beforehand,
// so the text is exact; and a store that never answers must not hold the
// raising rank much past its grace.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "dist/timeout_diagnosis.h"
#include "dtrain/store/file_store.h"

namespace {

using namespace std::chrono_literals;
using dtrain::dist::detail::diagnose_timeout;
using dtrain::dist::detail::diagnosis_grace;
using dtrain::store::Bytes;
using dtrain::store::FileStore;
using dtrain::store::Store;
using Clock = std::chrono::steady_clock;

std::shared_ptr<FileStore> fresh_store(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "timeout_diagnosis_" + name + "_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  return std::make_shared<FileStore>(path, 5s, 1);
}

TEST(TimeoutDiagnosis, GraceIsTheTimeoutUpToTwoSeconds) {
  EXPECT_EQ(diagnosis_grace(500ms), 500ms);
  EXPECT_EQ(diagnosis_grace(5min), 2s);
}

TEST(TimeoutDiagnosis, NamesSilentRanksAndRanksInAnotherCollective) {
  auto store = fresh_store("names");
  store->set("timeout/1", std::string("7 barrier"));
  store->set("timeout/3", std::string("8 all_reduce(SUM)"));
  const auto start = Clock::now();
  const auto diagnosis =
      diagnose_timeout(store, "default", 0, {0, 1, 2, 3}, 8, "all_reduce(SUM)", 300ms);
  EXPECT_EQ(diagnosis.missing, (std::vector<int>{1, 2}));
  EXPECT_EQ(diagnosis.text,
            "; rank(s) 1, 2 did not reach this all_reduce(SUM) (#8 on group 'default'): rank(s) "
            "2 reported no timeout within 300 ms of this rank's (stopped, hung, dead, or busy "
            "outside this group's collectives); rank 1 timed out in barrier #7 instead; rank(s) 3 "
            "timed out in it too");
  EXPECT_LT(Clock::now() - start, 2s);
  // Its own report is there for the others.
  EXPECT_EQ(store->get_string("timeout/0"), "8 all_reduce(SUM)");
}

TEST(TimeoutDiagnosis, EveryRankReportingTheSameCollectiveEndsEarly) {
  auto store = fresh_store("same");
  store->set("timeout/0", std::string("3 broadcast from rank 0"));
  const auto start = Clock::now();
  const auto diagnosis = diagnose_timeout(store, "sub", 1, {2, 5}, 3, "broadcast from rank 0", 10s);
  EXPECT_TRUE(diagnosis.missing.empty());
  EXPECT_EQ(diagnosis.text,
            "; every rank of the group reached this broadcast from rank 0 (#3 on group 'sub') "
            "and timed out in it");
  EXPECT_LT(Clock::now() - start, 5s);  // did not wait out the grace
}

TEST(TimeoutDiagnosis, GlobalRanksAreNamedInSubGroups) {
  auto store = fresh_store("global");
  const auto diagnosis = diagnose_timeout(store, "sub", 0, {1, 4}, 1, "barrier", 100ms);
  EXPECT_EQ(diagnosis.missing, (std::vector<int>{4}));  // global ranks, for the failure record
  const std::string& text = diagnosis.text;
  EXPECT_NE(text.find("rank(s) 1 (global rank 4) did not reach this barrier (#1 on group 'sub')"),
            std::string::npos)
      << text;
}

// A store whose every call blocks for long, like one hosted by a stopped process.
class StalledStore : public Store {
 public:
  void set(const std::string&, const Bytes&) override { stall(); }
  Bytes get(const std::string&) override { return stall(), Bytes{}; }
  std::int64_t add(const std::string&, std::int64_t) override { return stall(), 0; }
  Bytes compare_set(const std::string&, const Bytes&, const Bytes&) override {
    return stall(), Bytes{};
  }
  bool check(const std::vector<std::string>&) override { return stall(), false; }
  void wait(const std::vector<std::string>&, std::chrono::milliseconds) override { stall(); }
  bool delete_key(const std::string&) override { return stall(), false; }
  std::int64_t num_keys() override { return stall(), 0; }

 private:
  void stall() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, 30s);
    throw dtrain::store::StoreError("stalled store gave up");
  }
  std::mutex mutex_;
  std::condition_variable cv_;
};

TEST(TimeoutDiagnosis, AStoreThatDoesNotAnswerIsSaidSoInBoundedTime) {
  const auto start = Clock::now();
  const auto diagnosis = diagnose_timeout(std::make_shared<StalledStore>(), "default", 0, {0, 1, 2},
                                          4, "all_reduce(SUM)", 200ms);
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_TRUE(diagnosis.missing.empty());
  EXPECT_EQ(diagnosis.text,
            "; could not look for the ranks this all_reduce(SUM) (#4 on group 'default') waited "
            "on: the store did not answer within 700 ms");
}

}  // namespace

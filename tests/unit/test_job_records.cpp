// The records workers leave for dtrun (dtrain/store/job_records.h), and
// dtrun's side of them: the summary is built from their fields alone, so a
// reworded error leaves it as it was; a round's records read back from the
// store; and the watch that asks for flight-recorder dumps when a rank
// sits in one collective (Note [A rank that stops making progress]).
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "dtrain/launch/failure.h"
#include "dtrain/launch/rendezvous.h"
#include "dtrain/launch/worker_env.h"
#include "dtrain/store/file_store.h"
#include "dtrain/store/job_records.h"
#include "dtrain/store/prefix_store.h"
#include "round_records.h"

namespace {

using namespace std::chrono_literals;
using dtrain::launch::JobRecords;
using dtrain::launch::WorkerFailure;
using dtrain::store::FailureRecord;
using dtrain::store::ProgressRecord;

std::shared_ptr<dtrain::store::FileStore> fresh_store(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "job_records_" + name + "_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  return std::make_shared<dtrain::store::FileStore>(path, 5s, 1);
}

TEST(JobRecords, EncodeAndDecodeBothWays) {
  const FailureRecord failure{
      3, "sub group", 139, "all_reduce(SUM)", {1, 5}, "line one\nline two\n\nmissing 7\n"};
  EXPECT_EQ(dtrain::store::decode_failure_record(encode(failure)), failure);
  const FailureRecord nobody{0, "default", 1, "barrier", {}, ""};
  EXPECT_EQ(dtrain::store::decode_failure_record(encode(nobody)), nobody);
  const ProgressRecord progress{2, "default", 12, "broadcast from rank 0", "started", 40, 42, 777};
  EXPECT_EQ(dtrain::store::decode_progress_record(encode(progress)), progress);
  EXPECT_FALSE(dtrain::store::decode_failure_record("garbage").has_value());
  EXPECT_FALSE(dtrain::store::decode_progress_record(encode(failure)).has_value());
  std::string bad_rank = encode(progress);
  bad_rank.replace(bad_rank.find("rank 2"), 6, "rank x");
  EXPECT_FALSE(dtrain::store::decode_progress_record(bad_rank).has_value());
}

// The summary says who and where from the records' fields: two workers
// that word their errors differently, in their records and in their
// output, get the same likely cause and the same table.
TEST(JobRecords, ARewordedErrorLeavesTheSummaryAsItWas) {
  WorkerFailure victim;
  victim.rank = 0;
  victim.host = "vm";
  victim.status.code = 1;
  JobRecords records;
  records.failures = {{0,
                       "default",
                       139,
                       "all_reduce(SUM)",
                       {1},
                       "all_reduce(SUM) on group 'default' (gloo), rank 0 of 2: Timed out; "
                       "rank(s) 1 did not reach this all_reduce(SUM) (#139 on group 'default')"}};
  records.progress = {{0, "default", 139, "all_reduce(SUM)", "started", 139, 42},
                      {1, "default", 138, "all_reduce(SUM)", "completed", 138, 42}};
  JobRecords reworded = records;
  reworded.failures[0].message = "collective #139 gave up waiting; peer 1 absent";
  EXPECT_EQ(format_failure_summary({victim}, 0, 0, records),
            format_failure_summary({victim}, 0, 0, reworded));
  // The worker's own output, reworded too: only its quoted lines differ.
  WorkerFailure reworded_victim = victim;
  victim.log_tail = "error: rank(s) 1 did not reach this all_reduce(SUM)\n";
  reworded_victim.log_tail = "error: peer 1 absent from collective 139\n";
  const std::string before = format_failure_summary({victim}, 0, 0, records);
  const std::string after = format_failure_summary({reworded_victim}, 0, 0, reworded);
  const std::string head = before.substr(0, before.find("  last lines of its output"));
  EXPECT_EQ(head, after.substr(0, after.find("  last lines of its output")));
  EXPECT_NE(head.find("  likely cause: rank(s) 1 never reached all_reduce(SUM) (#139 on group "
                      "'default'), in which rank(s) 0 timed out\n    rank 1 was last in "
                      "all_reduce(SUM) (#138 on group 'default'), completed"),
            std::string::npos)
      << head;
  EXPECT_NE(head.find("    1     default       138  all_reduce(SUM)           completed  <- never "
                      "reached #139 on 'default'\n"),
            std::string::npos)
      << head;
  EXPECT_NE(head.find("    0     default       139  all_reduce(SUM)           started\n"),
            std::string::npos)
      << head;
}

TEST(JobRecords, ARoundsRecordsAreReadBackFromTheStore) {
  auto file = fresh_store("read");
  auto agents = std::make_shared<dtrain::store::PrefixStore>("dtrun/job", file);
  dtrain::launch::Rendezvous rdzv(agents, {});
  // What a worker of round 3 writes, under the prefix dtrun gave it.
  dtrain::store::PrefixStore worker(dtrain::launch::records_prefix("job", 3), file);
  const FailureRecord failure{1, "default", 5, "barrier", {0}, "m"};
  const ProgressRecord progress{0, "default", 4, "barrier", "completed", 4, 0};
  worker.set(dtrain::store::failure_record_key(1), encode(failure));
  worker.set(dtrain::store::progress_record_key(0), encode(progress));
  worker.set(dtrain::store::progress_record_key(2), std::string("not a record"));
  const JobRecords read = dtrain::launch::read_round_records(rdzv, 3, 3);
  ASSERT_EQ(read.failures.size(), 1u);
  EXPECT_EQ(read.failures[0], failure);
  ASSERT_EQ(read.progress.size(), 1u);
  EXPECT_EQ(read.progress[0], progress);
  EXPECT_TRUE(dtrain::launch::read_round_records(rdzv, 2, 3).progress.empty());
}

// A rank in one collective for the stall window asks every rank of the
// node that can dump for a dump, once, until some rank moves again; a rank
// between collectives (computing) is no stall.
TEST(JobRecords, AStalledCollectiveAsksForDumpsOnce) {
  auto file = fresh_store("watch");
  auto agents = std::make_shared<dtrain::store::PrefixStore>("dtrun/job", file);
  dtrain::launch::Rendezvous rdzv(agents, {});
  dtrain::store::PrefixStore worker(dtrain::launch::records_prefix("job", 0), file);
  auto publish = [&](int rank, std::int64_t seq, const std::string& state, int signal) {
    worker.set(dtrain::store::progress_record_key(rank),
               encode(ProgressRecord{rank, "default", seq, "all_reduce(SUM)", state, seq, signal,
                                     100 + rank}));
  };
  dtrain::launch::ProgressWatch watch(0, {0, 1, 2}, 10s);
  const auto t0 = dtrain::launch::ProgressWatch::Clock::now();
  publish(0, 7, "started", 40);
  publish(1, 6, "completed", 40);  // stopped after #6, say
  publish(2, 6, "completed", 0);   // cannot dump
  EXPECT_TRUE(watch.check(rdzv, t0).empty());
  EXPECT_TRUE(watch.check(rdzv, t0 + 9s).empty());
  const auto asked = watch.check(rdzv, t0 + 10s);
  using Ask = dtrain::launch::ProgressWatch::DumpAsk;
  EXPECT_EQ(asked, (std::map<int, Ask>{{0, {40, 100}}, {1, {40, 101}}}));
  EXPECT_TRUE(watch.check(rdzv, t0 + 30s).empty()) << "asked twice for one stall";
  publish(0, 8, "completed", 40);  // moved on: a later stall is a new one
  EXPECT_TRUE(watch.check(rdzv, t0 + 31s).empty());
  publish(0, 9, "started", 40);
  EXPECT_TRUE(watch.check(rdzv, t0 + 32s).empty());
  EXPECT_EQ(watch.check(rdzv, t0 + 42s).size(), 2u);
}

TEST(JobRecords, WorkersAreToldWhereToWriteThem) {
  dtrain::launch::RoundFacts facts;
  facts.records = {"::1", 29400, "dtrun/job/round/2/records"};
  facts.flight_recorder_dir = "logs/job/round_2";
  dtrain::launch::WorkerPlace place;
  place.world_size = 1;
  place.local_world_size = 1;
  place.group_world_size = 1;
  auto env = dtrain::launch::worker_environment({}, place, facts);
  EXPECT_EQ(env["DTRUN_RECORDS_HOST"], "::1");
  EXPECT_EQ(env["DTRUN_RECORDS_PORT"], "29400");
  EXPECT_EQ(env["DTRUN_RECORDS_PREFIX"], "dtrun/job/round/2/records");
  EXPECT_EQ(env["DTRAIN_FLIGHT_RECORDER_DIR"], "logs/job/round_2");
  env = dtrain::launch::worker_environment({}, place, {});
  EXPECT_EQ(env.count("DTRUN_RECORDS_HOST"), 0u);
  EXPECT_EQ(env.count("DTRAIN_FLIGHT_RECORDER_DIR"), 0u);
}

}  // namespace

// Note [Flight recorder] (sdk/src/dist/flight_recorder.h): a bounded record
// of the last collectives, whose states follow their turns and their Works,
// dumped as JSON in the shape of PyTorch's flight recorder.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "dist/flight_recorder.h"
#include "dtrain/dist/work.h"

namespace {

using dtrain::dist::Work;
using dtrain::dist::detail::flight_recorder_json;
using dtrain::dist::detail::FlightRecorder;
using dtrain::dist::detail::RecordedCollective;

RecordedCollective collective(std::int64_t seq, const std::string& op) {
  RecordedCollective entry;
  entry.group = "default";
  entry.backend = "gloo";
  entry.group_ranks = {0, 1};
  entry.seq = seq;
  entry.op = op;
  entry.input_sizes = {{2, 3}};
  entry.input_dtypes = {"Float"};
  entry.timeout_ms = 5000;
  return entry;
}

// Records collective `seq` and runs its turn to the end, attached to `work`
// (not finished here), as the front end does for a launched operation.
std::int64_t turn_ran(FlightRecorder& recorder, std::int64_t seq, const std::string& op,
                      const std::shared_ptr<Work>& work) {
  const auto id = recorder.record(collective(seq, op));
  recorder.attach(id, work);
  recorder.started(id);
  recorder.finished(id, true);
  return id;
}

TEST(FlightRecorder, KeepsTheLastEntriesAndFollowsTheirStates) {
  FlightRecorder recorder(3);
  for (int seq = 1; seq <= 5; ++seq) {
    recorder.record(collective(seq, "all_reduce(SUM)"));
  }
  auto entries = recorder.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.front().seq, 3);
  EXPECT_EQ(entries.front().record_id, 3);
  EXPECT_EQ(recorder.recorded(), 5);
  EXPECT_EQ(entries.back().state, "scheduled");
  EXPECT_GT(entries.back().time_created_ns, 0);

  recorder.started(3);
  recorder.finished(3, true);
  recorder.started(4);
  recorder.started(1);  // dropped already: nothing to mark
  EXPECT_EQ(recorder.entries()[0].state, "completed");
  // Where the process is: the oldest entry not completed.
  EXPECT_EQ(recorder.current()->seq, 4);
  EXPECT_EQ(recorder.current()->state, "started");
  recorder.finished(4, false);
  EXPECT_EQ(recorder.current()->state, "failed");
}

// The ring reuses the oldest slot: the new entry keeps nothing of the old
// one's state, times, Work or shapes.
TEST(FlightRecorder, AReusedSlotHoldsOnlyTheNewEntry) {
  FlightRecorder recorder(2);
  auto work = std::make_shared<Work>("all_reduce");
  const auto first = turn_ran(recorder, 1, "all_reduce(SUM)", work);
  work->finish();
  recorder.record(collective(2, "barrier"));
  RecordedCollective wider = collective(3, "all_gather");
  wider.input_sizes = {{4}, {5, 6, 7}};
  wider.input_dtypes = {"Half", "Float"};
  const auto third = recorder.record(wider);  // in the first one's slot
  EXPECT_EQ(third, 3);
  const auto last = recorder.last();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->record_id, 3);
  EXPECT_EQ(last->op, "all_gather");
  EXPECT_EQ(last->state, "scheduled");
  EXPECT_EQ(last->time_started_ns, 0);
  EXPECT_EQ(last->time_completed_ns, 0);
  EXPECT_TRUE(last->work.expired());
  EXPECT_EQ(last->input_sizes, (std::vector<std::vector<std::int64_t>>{{4}, {5, 6, 7}}));
  EXPECT_EQ(last->input_dtypes, (std::vector<std::string>{"Half", "Float"}));
  recorder.started(first);  // dropped: its slot is the third's now
  EXPECT_EQ(recorder.last()->state, "scheduled");
  const auto entries = recorder.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].record_id, 2);
  EXPECT_EQ(entries[1].record_id, 3);
}

// A turn that ran before its Work finished (NCCL's stream) is started until
// the Work says otherwise; a barrier, recorded from its Work alone, completes.
TEST(FlightRecorder, AWorkThatHasNotFinishedKeepsItsEntryStarted) {
  FlightRecorder recorder(8);
  auto work = std::make_shared<Work>("all_reduce");
  turn_ran(recorder, 1, "all_reduce(SUM)", work);
  EXPECT_EQ(recorder.last()->state, "started");
  work->finish();
  EXPECT_EQ(recorder.last()->state, "completed");
  EXPECT_GT(recorder.last()->time_completed_ns, 0);

  const auto barrier = recorder.record(collective(2, "barrier"));
  auto barrier_work = std::make_shared<Work>("barrier");
  recorder.attach(barrier, barrier_work);
  EXPECT_EQ(recorder.current()->state, "scheduled");
  barrier_work->finish();
  EXPECT_EQ(recorder.current()->seq, 2);
  EXPECT_EQ(recorder.current()->state, "completed");
}

TEST(FlightRecorder, NothingIsKeptWithoutRoom) {
  FlightRecorder recorder(0);
  EXPECT_EQ(recorder.record(collective(1, "barrier")), 0);
  EXPECT_TRUE(recorder.entries().empty());
  EXPECT_FALSE(recorder.current().has_value());
}

TEST(FlightRecorder, DumpsInPyTorchsShape) {
  FlightRecorder recorder(4);
  recorder.record(collective(7, "broadcast from rank 0"));
  RecordedCollective sub = collective(2, "all_gather");
  sub.group = "g\"1";
  sub.group_ranks = {1, 3};
  recorder.record(sub);
  const std::string json = flight_recorder_json(recorder.entries(), 1, 4);
  for (const std::string expected :
       {"\"version\": \"2.4\"", "\"rank\": 1", "\"world_size\": 4",
        "\"default\": {\"name\": \"default\", \"desc\": \"gloo\", \"ranks\": \"[0, 1]\"}",
        "\"g\\\"1\": {\"name\": \"g\\\"1\"", "\"record_id\": 1, \"pg_id\": 0",
        "\"record_id\": 2, \"pg_id\": 1", "\"collective_seq_id\": 7",
        "\"profiling_name\": \"gloo:broadcast\"", "\"profiling_name\": \"gloo:all_gather\"",
        "\"input_sizes\": [[2, 3]]", "\"input_dtypes\": [\"Float\"]", "\"state\": \"scheduled\"",
        "\"time_discovered_started_ns\": null", "\"timeout_ms\": 5000", "\"is_p2p\": false"}) {
    EXPECT_NE(json.find(expected), std::string::npos) << expected << " in\n" << json;
  }
}

}  // namespace

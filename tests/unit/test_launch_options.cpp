// dtrain::launch's pure pieces: flag texts, the worker environment, and the
// failure record every agent reads for the summary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dtrain/launch/failure.h"
#include "dtrain/launch/launch_options.h"
#include "dtrain/launch/worker_env.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "heartbeats.h"
#include "test_support.h"

namespace {

using namespace dtrain::launch;
using dtrain::testing::error_of;

TEST(LaunchOptions, NnodesIsACountOrARange) {
  EXPECT_EQ(parse_nnodes("2").min, 2);
  EXPECT_EQ(parse_nnodes("2").max, 2);
  EXPECT_FALSE(parse_nnodes("2").elastic());
  const NodeRange range = parse_nnodes("1:4");
  EXPECT_EQ(range.min, 1);
  EXPECT_EQ(range.max, 4);
  EXPECT_TRUE(range.elastic());
  EXPECT_NE(error_of([] { parse_nnodes("0"); }).find("'0'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_nnodes("4:1"); }).find("MIN (4) is larger than MAX (1)"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_nnodes("1:"); }).find("--nnodes '1:'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_nnodes("two"); }).find("'two'"), std::string::npos);
}

TEST(LaunchOptions, NprocPerNodeFollowsTheDevices) {
  const std::vector<std::string> two_gpus{"2", "3"};
  EXPECT_EQ(parse_nproc_per_node("4", two_gpus), 4);
  EXPECT_EQ(parse_nproc_per_node("gpu", two_gpus), 2);
  EXPECT_EQ(parse_nproc_per_node("auto", two_gpus), 2);
  EXPECT_GE(parse_nproc_per_node("cpu", two_gpus), 1);
  EXPECT_GE(parse_nproc_per_node("auto", {}), 1);
  EXPECT_NE(error_of([] { parse_nproc_per_node("gpu", {}); }).find("no GPU is visible"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_nproc_per_node("0", two_gpus); }).find("'0'"), std::string::npos);
}

TEST(LaunchOptions, DevicesComeFromCudaVisibleDevices) {
  ::setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  EXPECT_EQ(detect_local_devices(), (std::vector<std::string>{"2", "3"}));
  ::setenv("CUDA_VISIBLE_DEVICES", "1,-1,2", 1);  // CUDA stops at the first invalid entry
  EXPECT_EQ(detect_local_devices(), (std::vector<std::string>{"1"}));
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_TRUE(detect_local_devices().empty());
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(LaunchOptions, EndpointsTakeAHostAndAPort) {
  EXPECT_EQ(parse_endpoint("10.0.0.1:8777", 1).host, "10.0.0.1");
  EXPECT_EQ(parse_endpoint("10.0.0.1:8777", 1).port, 8777);
  EXPECT_EQ(parse_endpoint("node7", 29400).port, 29400);
  EXPECT_EQ(parse_endpoint("[::1]:99", 1).host, "::1");
  EXPECT_NE(error_of([] { parse_endpoint("h:99999", 1); }).find("'99999'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_endpoint(":80", 1); }).find("the host is empty"),
            std::string::npos);
  // IPv6 (Note [IPv6 address syntax]): in brackets with a port, as torchrun takes it.
  EXPECT_EQ(parse_endpoint("[fd00::2]:29400", 1).host, "fd00::2");
  EXPECT_EQ(parse_endpoint("[fd00::2]:29400", 1).port, 29400);
  EXPECT_EQ(parse_endpoint("[::1]", 29400).port, 29400);
  EXPECT_EQ(error_of([] { parse_endpoint("::1:29400", 1); }),
            "endpoint '::1:29400': more than one ':' (an IPv6 address goes in brackets: "
            "[::1]:29500); expected HOST:PORT, or [IPV6]:PORT as in [::1]:29400");
  EXPECT_NE(error_of([] { parse_endpoint("[::1:29400", 1); }).find("'[' is not closed"),
            std::string::npos);
}

TEST(LaunchOptions, AHostAloneMayBeBareOrBracketedIpv6) {
  EXPECT_EQ(parse_host("::1", "--master-addr"), "::1");
  EXPECT_EQ(parse_host("[::1]", "--master-addr"), "::1");
  EXPECT_EQ(parse_host("10.0.0.1", "--master-addr"), "10.0.0.1");
  EXPECT_EQ(parse_host("node7", "--master-addr"), "node7");
  EXPECT_NE(error_of([] {
              parse_host("::1:29500", "--master-addr");
            }).find("--master-addr '::1:29500': a ':' but no IPv6 address"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_host("", "--local-addr"); }).find("--local-addr '': the host is empty"),
      std::string::npos);
}

TEST(LaunchOptions, StreamsAreOneValueOrPerLocalRank) {
  EXPECT_EQ(parse_streams("3", "--tee").for_rank(5), Streams::kBoth);
  const StreamsSpec spec = parse_streams("0:1,2:2", "--redirects");
  EXPECT_EQ(spec.for_rank(0), Streams::kOut);
  EXPECT_EQ(spec.for_rank(1), Streams::kNone);
  EXPECT_EQ(spec.for_rank(2), Streams::kErr);
  EXPECT_TRUE(spec.any());
  EXPECT_FALSE(parse_streams("0", "--tee").any());
  EXPECT_NE(error_of([] { parse_streams("0:4", "--tee"); }).find("--tee '0:4'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_streams("x:1", "--tee"); }).find("not a local rank"),
            std::string::npos);
  EXPECT_EQ(parse_local_ranks_filter("0,2"), (std::set<int>{0, 2}));
  EXPECT_TRUE(parse_local_ranks_filter("").empty());
}

TEST(LaunchOptions, RendezvousConfSetsTimeouts) {
  LaunchOptions options;
  apply_rendezvous_conf(options,
                        parse_key_values("join_timeout=5,last_call_timeout=0.5", "--rdzv-conf"));
  EXPECT_EQ(options.join_timeout.count(), 5000);
  EXPECT_EQ(options.last_call_timeout.count(), 500);
  EXPECT_NE(error_of([&] {
              apply_rendezvous_conf(options, {{"bogus", "1"}});
            }).find("unknown key 'bogus'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_key_values("novalue", "--rdzv-conf"); }).find("KEY=VALUE"),
            std::string::npos);
}

// Note [Duration range]: 1 ms to one week, checked before the conversion
// to milliseconds, so neither overflow nor rounding to zero gets through.
TEST(LaunchOptions, DurationsAreSecondsFromOneMillisecondToAWeek) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parse_seconds("0.1", "--x"), milliseconds(100));
  EXPECT_EQ(parse_seconds("0.001", "--x"), milliseconds(1));
  EXPECT_EQ(parse_seconds("604800", "--x"), std::chrono::hours(24 * 7));
  const std::string expected =
      ": expected a number of seconds from 0.001 (1 ms) to 604800 (one week)";
  for (const char* bad : {"1e20", "1e-9", "0", "-1", "604800.5", "nan", "inf", "", "10s"}) {
    const std::string label = std::string("--stop-timeout '") + bad + "'";
    EXPECT_EQ(error_of([&] { parse_seconds(bad, label); }), label + expected);
  }
  LaunchOptions options;
  EXPECT_EQ(error_of([&] {
              apply_rendezvous_conf(options, {{"join_timeout", "1e-9"}});
            }),
            "--rdzv-conf join_timeout=1e-9" + expected);
  EXPECT_EQ(error_of([&] {
              apply_rendezvous_conf(options, {{"read_timeout", "1e20"}});
            }),
            "--rdzv-conf read_timeout=1e20" + expected);
}

// Options built in code, not parsed, meet the same range in validate().
TEST(LaunchOptions, ValidateChecksDurationsByTheirFlags) {
  LaunchOptions options;
  options.program = {"/bin/true"};
  options.stop_timeout = std::chrono::milliseconds(-5);
  EXPECT_EQ(error_of([&] { validate(options); }),
            "--stop-timeout is -5 ms; expected 1 ms to one week (604800 s)");
  options.stop_timeout = std::chrono::seconds(1);
  options.heartbeat_timeout = std::chrono::hours(24 * 8);
  EXPECT_EQ(error_of([&] { validate(options); }),
            "--rdzv-conf heartbeat_timeout is 691200000 ms; expected 1 ms to one week (604800 s)");
  // A monitor interval past half the heartbeat timeout would lose live nodes.
  options.heartbeat_timeout = std::chrono::seconds(30);
  options.monitor_interval = std::chrono::seconds(20);
  EXPECT_NO_THROW(validate(options));  // one node: no peer to lose
  options.nnodes = {2, 2};
  EXPECT_EQ(error_of([&] { validate(options); }),
            "--monitor-interval 20 is more than half of --rdzv-conf heartbeat_timeout (30 s): "
            "agents would be taken for lost between two checks; expected at most 15");
  options.monitor_interval = std::chrono::seconds(15);
  EXPECT_NO_THROW(validate(options));
}

TEST(LaunchOptions, HeartbeatPeriodIsAFifthOfTheTimeoutWithinTheLoopsPace) {
  using std::chrono::milliseconds;
  EXPECT_EQ(heartbeat_period(milliseconds(1000), milliseconds(50)), milliseconds(200));
  EXPECT_EQ(heartbeat_period(milliseconds(30000), milliseconds(100)), milliseconds(1000));
  EXPECT_EQ(heartbeat_period(milliseconds(100), milliseconds(50)), milliseconds(50));
  // A monitor interval over a second (once undefined behaviour in std::clamp).
  EXPECT_EQ(heartbeat_period(milliseconds(30000), milliseconds(5000)), milliseconds(5000));
}

TEST(LaunchOptions, LogDirIsCreatedOrNamedWithTheReason) {
  dtrain::testing::TempDir dir;
  const std::string fresh = dir.file("logs/deeper");
  EXPECT_NO_THROW(check_log_dir(fresh));
  EXPECT_TRUE(std::filesystem::is_directory(fresh));
  std::ofstream(dir.file("plain")) << "a file, not a directory";
  const std::string under_file = dir.file("plain") + "/logs";
  EXPECT_EQ(error_of([&] { check_log_dir(under_file); }),
            "--log-dir '" + under_file +
                "': cannot create the directory (Not a directory); expected a directory dtrun "
                "may write in");
  EXPECT_EQ(error_of([&] { check_log_dir(dir.file("plain")); }),
            "--log-dir '" + dir.file("plain") +
                "': cannot create the directory (Not a directory); expected a directory dtrun "
                "may write in");
}

TEST(LaunchOptions, ValidateRejectsContradictions) {
  LaunchOptions options;
  options.program = {"/bin/true"};
  EXPECT_NO_THROW(validate(options));
  options.nnodes = {1, 2};
  EXPECT_NE(error_of([&] { validate(options); }).find("needs an elastic rendezvous"),
            std::string::npos);
  options.backend = RendezvousBackend::kStore;
  EXPECT_NO_THROW(validate(options));
  options.program.clear();
  EXPECT_NE(error_of([&] { validate(options); }).find("no program"), std::string::npos);
}

TEST(WorkerEnv, SetsTorchrunsVariables) {
  WorkerPlace place{.rank = 5,
                    .local_rank = 1,
                    .group_rank = 2,
                    .world_size = 6,
                    .local_world_size = 2,
                    .group_world_size = 3};
  RoundFacts round{.master_addr = "10.0.0.1",
                   .master_port = 4242,
                   .restart_count = 2,
                   .max_restarts = 3,
                   .run_id = "777",
                   .role = "trainer",
                   .bind_devices = {}};
  Environment env = worker_environment({{"PATH", "/bin"}}, place, round);
  EXPECT_EQ(env["PATH"], "/bin");
  EXPECT_EQ(env["RANK"], "5");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["GROUP_RANK"], "2");
  EXPECT_EQ(env["WORLD_SIZE"], "6");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "3");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "4242");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["DTRUN_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "777");
  EXPECT_EQ(env["ROLE_NAME"], "trainer");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "1");
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);

  EXPECT_EQ(worker_environment({{"OMP_NUM_THREADS", "8"}}, place, round)["OMP_NUM_THREADS"], "8");
  place.local_world_size = 1;
  EXPECT_EQ(worker_environment({}, place, round).count("OMP_NUM_THREADS"), 0u);

  EXPECT_EQ(worker_environment({}, place, round).count("DTRAIN_SHARE_GPU"), 0u);
  round.share_gpu = true;
  EXPECT_EQ(worker_environment({}, place, round)["DTRAIN_SHARE_GPU"], "1");
  round.share_gpu = false;

  round.bind_devices = {"2", "3"};
  EXPECT_EQ(worker_environment({}, place, round)["CUDA_VISIBLE_DEVICES"], "3");
  place.local_rank = 2;  // more workers than GPUs: round robin
  EXPECT_EQ(worker_environment({}, place, round)["CUDA_VISIBLE_DEVICES"], "2");
}

TEST(Failure, RecordsSurviveTheStoreAndNameTheRank) {
  WorkerFailure failure;
  failure.rank = 3;
  failure.local_rank = 1;
  failure.group_rank = 1;
  failure.host = "node-b";
  failure.status.signal = 9;
  failure.log_tail = "step 10\nKilled\n";
  failure.time_ms = 1764400000123;
  const auto decoded = decode_failure(encode(failure));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->rank, 3);
  EXPECT_EQ(decoded->host, "node-b");
  EXPECT_EQ(decoded->status.signal, 9);
  EXPECT_EQ(decoded->time_ms, 1764400000123);
  EXPECT_EQ(decoded->log_tail, "step 10\nKilled\n");
  EXPECT_FALSE(decode_failure("garbage").has_value());

  WorkerFailure victim = failure;
  victim.rank = 0;
  victim.group_rank = 0;
  victim.host = "node-a";
  victim.status = {};
  victim.status.code = 1;
  victim.time_ms = decoded->time_ms + 5;  // failed after the root cause
  const std::string summary = format_failure_summary({victim, *decoded}, 2, 3);
  EXPECT_NE(summary.find("  also failed: rank 0 (local rank 1 on node 0, host node-a) with exit "
                         "code 1\n"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("also failed: rank 3"), std::string::npos) << summary;
  EXPECT_NE(summary.find("after 2 restarts (--max-restarts 3)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("rank 3 (local rank 1 on node 1, host node-b) ended with signal 9 "
                         "(SIGKILL)"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("    | Killed\n"), std::string::npos) << summary;
}

// Note [Which rank a timeout waited on]: the victims' failure records name
// the rank that never reached their collective, and the summary names it
// first, once per collective, with the ranks that said so, even though a
// victim failed first; with where its flight recorder last saw it.
TEST(Failure, RanksThatNeverReachedACollectiveAreTheLikelyCause) {
  using dtrain::launch::JobRecords;
  WorkerFailure first;
  first.rank = 0;
  first.local_rank = 0;
  first.group_rank = 0;
  first.host = "node-a";
  first.status.code = 1;
  first.time_ms = 100;
  first.log_tail = "epoch 1\nan error\n";
  WorkerFailure second = first;
  second.rank = 1;
  second.group_rank = 1;
  second.time_ms = 120;
  JobRecords records;
  records.failures = {{1, "default", 2, "all_reduce(SUM)", {2}, "whatever it said"},
                      {0, "default", 2, "all_reduce(SUM)", {2}, "something else"},
                      // A sub-group's record names global ranks.
                      {1, "g", 7, "barrier", {3}, ""}};
  records.progress = {{2, "default", 1, "all_reduce(SUM)", "completed", 5, 0}};
  const std::string summary = format_failure_summary({second, first}, 0, 0, records);
  const std::string cause =
      "  likely cause: rank(s) 2 never reached all_reduce(SUM) (#2 on group 'default'), in which "
      "rank(s) 0, 1 timed out\n"
      "    rank 2 was last in all_reduce(SUM) (#1 on group 'default'), completed (its flight "
      "recorder)\n";
  const auto at = summary.find(cause);
  ASSERT_NE(at, std::string::npos) << summary;
  EXPECT_LT(at, summary.find("first failure: rank 0")) << summary;
  EXPECT_EQ(summary.find(cause, at + 1), std::string::npos) << "said twice: " << summary;
  EXPECT_NE(summary.find("  likely cause: rank(s) 3 never reached barrier (#7 on group 'g'), in "
                         "which rank(s) 1 timed out\n    rank 3 left no flight recorder record\n"),
            std::string::npos)
      << summary;
  // The agent that ran a named rank quotes it, once; rank 0 is quoted as
  // the first failure only, and a rank nobody named not at all.
  const std::string quoted =
      format_failure_summary({second, first}, 0, 0, records,
                             {{0, "zero\n"}, {2, "step 4\nstuck\n"}, {3, ""}, {5, "five\n"}});
  const std::string tail2 =
      "  last lines of rank 2's output (a likely cause):\n    | step 4\n    | stuck\n";
  EXPECT_NE(quoted.find(tail2), std::string::npos) << quoted;
  EXPECT_EQ(quoted.find(tail2, quoted.find(tail2) + 1), std::string::npos) << quoted;
  EXPECT_NE(quoted.find("  rank 3 (a likely cause) wrote nothing\n"), std::string::npos) << quoted;
  EXPECT_EQ(quoted.find("rank 0's output"), std::string::npos) << quoted;
  EXPECT_EQ(quoted.find("five"), std::string::npos) << quoted;
  // Every rank reached it (a slow peer, not a missing one), or no record: no such line.
  records.failures = {{0, "d", 3, "all_reduce(SUM)", {}, "every rank reached it"}};
  EXPECT_EQ(format_failure_summary({first}, 0, 0, records).find("likely cause"), std::string::npos);
  EXPECT_EQ(format_failure_summary({first}, 0, 0).find("likely cause"), std::string::npos);
  // The words of a worker's output are no evidence, however they read.
  first.log_tail = "x; rank(s) 2 did not reach this all_reduce(SUM) (#2 on group 'default')\n";
  EXPECT_EQ(format_failure_summary({first}, 0, 0).find("likely cause"), std::string::npos);
}

// A crash trace is quoted from its header, whose top frames say where the
// worker crashed, even when it is longer than the usual tail.
TEST(Failure, TailKeepsACrashTracesTop) {
  using dtrain::launch::failure_tail;
  std::string trace = "loss 0.5\n[rank 1/local 1] fatal signal 11 (SIGSEGV); native stack:\n";
  for (int frame = 0; frame < 27; ++frame) {
    trace += "frame " + std::to_string(frame) + "\n";
  }
  const std::string quoted = failure_tail(trace, 20, 40);
  EXPECT_EQ(quoted.substr(0, quoted.find('\n')),
            "[rank 1/local 1] fatal signal 11 (SIGSEGV); native stack:");
  EXPECT_NE(quoted.find("frame 0\n"), std::string::npos);
  EXPECT_EQ(quoted.substr(quoted.rfind('\n') + 1), "frame 26");
  // Capped at trace_lines, from the top.
  const std::string capped = failure_tail(trace, 20, 5);
  EXPECT_EQ(capped.substr(capped.rfind('\n') + 1), "frame 3");
  // A short trace, or none, is the usual tail.
  EXPECT_EQ(failure_tail("a\nb\nc\n", 2, 40), "b\nc");
  EXPECT_EQ(failure_tail("x\n[rank 0/local 0] fatal signal 6 (SIGABRT); native stack:\nf\n", 5, 40),
            "x\n[rank 0/local 0] fatal signal 6 (SIGABRT); native stack:\nf");
}

// An abort after an uncaught exception is quoted from the exception's
// report, which says what went wrong, down through the trace's top frames.
TEST(Failure, TailKeepsTheUncaughtExceptionAboveACrashTrace) {
  using dtrain::launch::failure_tail;
  std::string trace =
      "[rank 0/local 0] loss 0.5\n"
      "[rank 1/local 1] step 3\n"
      "[rank 1/local 1] terminate: uncaught gloo::EnforceNotMet: op.preamble.length <= "
      "op.nbytes. 20 vs 16\n"
      "[rank 1/local 1] a Gloo message of 20 bytes arrived where this rank had room for 16\n"
      "[rank 1/local 1] fatal signal 6 (SIGABRT); native stack:\n";
  for (int frame = 0; frame < 27; ++frame) {
    trace += "frame " + std::to_string(frame) + "\n";
  }
  const std::string quoted = failure_tail(trace, 20, 40);
  EXPECT_EQ(quoted.substr(0, quoted.find('\n')),
            "[rank 1/local 1] terminate: uncaught gloo::EnforceNotMet: op.preamble.length <= "
            "op.nbytes. 20 vs 16")
      << quoted;
  EXPECT_NE(quoted.find("\n[rank 1/local 1] a Gloo message of 20 bytes"), std::string::npos);
  EXPECT_EQ(quoted.substr(quoted.rfind('\n') + 1), "frame 26");
  // Another rank's "terminate" line, or one above an unrelated line, is not
  // this trace's report.
  const std::string other =
      "[rank 0/local 0] terminate: uncaught std::runtime_error: x\n"
      "[rank 1/local 1] fatal signal 6 (SIGABRT); native stack:\n" +
      trace.substr(trace.find("frame 0"));
  EXPECT_EQ(failure_tail(other, 20, 40).substr(0, 16), "[rank 1/local 1]");
  const std::string apart =
      "[rank 1/local 1] terminate: uncaught std::runtime_error: x\n"
      "an unrelated line\n"
      "[rank 1/local 1] fatal signal 6 (SIGABRT); native stack:\n" +
      trace.substr(trace.find("frame 0"));
  EXPECT_EQ(failure_tail(apart, 20, 40).substr(0, 30), "[rank 1/local 1] fatal signal ");
}

TEST(Failure, LastLines) {
  EXPECT_EQ(last_lines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(last_lines("a\nb", 5), "a\nb");
  EXPECT_EQ(last_lines("", 3), "");
  dtrain::util::ExitStatus status;
  status.code = 3;
  EXPECT_EQ(status.describe(), "exit code 3");
  EXPECT_EQ(status.shell_code(), 3);
}

}  // namespace

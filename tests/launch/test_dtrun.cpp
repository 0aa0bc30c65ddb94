// dtrun on one machine, run as users run it, with small shell scripts as
// workers: their environment, group restarts, the failure summary, signals
// and orphans, output routing and flag errors (elastic membership:
// test_dtrun_elastic.cpp).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "dtrain/launch/rendezvous.h"
#include "dtrain/store/prefix_store.h"
#include "dtrain/store/tcp_store.h"
#include "dtrain/util/build_info.h"
#include "dtrun_fixture.h"
#include "dtrun_test_util.h"
#include "multi_process.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::Dtrun;
using dtrain::testing::eventually;
using dtrain::testing::kDtrun;
using dtrain::testing::process_alive;
using dtrain::testing::read_env_file;
using dtrain::testing::read_text;
using dtrain::testing::start_dtrun;

TEST_F(Dtrun, EveryWorkerGetsItsPlaceInTheEnvironment) {
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "3", "--max-restarts", "2"},
                "env > \"$OUT/env.$RANK\""),
            0)
      << output_;
  std::string run_id;
  for (int rank = 0; rank < 3; ++rank) {
    auto env = read_env_file(file("env." + std::to_string(rank)));
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(env["RANK"], std::to_string(rank));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(rank));
    EXPECT_EQ(env["GROUP_RANK"], "0");
    EXPECT_EQ(env["WORLD_SIZE"], "3");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "3");
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "1");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    EXPECT_GT(std::stoi(env["MASTER_PORT"]), 0);
    EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "0");
    EXPECT_EQ(env["DTRUN_RESTART_COUNT"], "0");
    EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "2");
    EXPECT_EQ(env["OMP_NUM_THREADS"], "1");  // three workers share the node
    EXPECT_EQ(env["ROLE_NAME"], "default");
    EXPECT_FALSE(env["TORCHELASTIC_RUN_ID"].empty());
    if (rank > 0) {
      EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], run_id);
    }
    run_id = env["TORCHELASTIC_RUN_ID"];
  }
}

// A pod of the PyTorch training operator (PyTorchJob, nprocPerNode 2): dtrun
// with no flags takes the job's shape from the PET_ variables, as torchrun
// does; a flag given wins over its variable.
TEST_F(Dtrun, TheOperatorsPetVariablesStandInForFlags) {
  const std::string port = std::to_string(dtrain::testing::free_port());
  dtrain::testing::ScopedEnv env;
  for (const auto& [name, value] : {std::pair<const char*, std::string>{"PET_NNODES", "1"},
                                    {"PET_NPROC_PER_NODE", "2"},
                                    {"PET_NODE_RANK", "0"},
                                    {"PET_MASTER_ADDR", "127.0.0.1"},
                                    {"PET_MASTER_PORT", port},
                                    {"PET_MAX_RESTARTS", "1"},
                                    {"MASTER_ADDR", "127.0.0.1"},
                                    {"MASTER_PORT", port},
                                    {"WORLD_SIZE", "2"},
                                    {"RANK", "0"}}) {
    env.set(name, value.c_str());
  }
  ASSERT_EQ(run({}, "env > \"$OUT/env.$RANK\""), 0) << output_;
  EXPECT_NE(output_.find("rendezvous store at 127.0.0.1:" + port), std::string::npos) << output_;
  for (int rank = 0; rank < 2; ++rank) {
    auto worker = read_env_file(file("env." + std::to_string(rank)));
    EXPECT_EQ(worker["RANK"], std::to_string(rank));
    EXPECT_EQ(worker["WORLD_SIZE"], "2");
    EXPECT_EQ(worker["TORCHELASTIC_MAX_RESTARTS"], "1");
  }
  ASSERT_EQ(run({"--nproc-per-node", "1"}, "env > \"$OUT/flag.$RANK\""), 0) << output_;
  EXPECT_EQ(read_env_file(file("flag.0"))["WORLD_SIZE"], "1");
  EXPECT_FALSE(std::filesystem::exists(file("flag.1")));
}

TEST_F(Dtrun, RoleBecomesTheWorkersRoleName) {
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", "--role", "trainer"},
                "env > \"$OUT/env.$RANK\""),
            0)
      << output_;
  EXPECT_EQ(read_env_file(file("env.0"))["ROLE_NAME"], "trainer");
  EXPECT_EQ(read_env_file(file("env.1"))["ROLE_NAME"], "trainer");
}

TEST_F(Dtrun, KeepsTheUsersOmpNumThreads) {
  ::setenv("OMP_NUM_THREADS", "3", 1);
  const int code = run({"--standalone", "--nproc-per-node", "2"}, "env > \"$OUT/env.$RANK\"");
  ::unsetenv("OMP_NUM_THREADS");
  ASSERT_EQ(code, 0) << output_;
  EXPECT_EQ(read_env_file(file("env.1"))["OMP_NUM_THREADS"], "3");
}

// GPUs as the seed's CUDA_VISIBLE_DEVICES="2,3" names them (no real GPU
// needed): --nproc-per-node gpu starts one worker per GPU; workers see every
// GPU (torchrun's way) unless --bind-devices gives each its own.
TEST_F(Dtrun, GpuCountAndDeviceBindingFollowCudaVisibleDevices) {
  ::setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  const std::string script = "env > \"$OUT/env.$RANK\"";
  const int shared = run({"--standalone", "--nproc-per-node", "gpu"}, script);
  const auto shared0 = read_env_file(file("env.0"));
  const auto shared1 = read_env_file(file("env.1"));
  const int bound = run({"--standalone", "--nproc-per-node", "gpu", "--bind-devices"}, script);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_EQ(shared, 0) << output_;
  ASSERT_EQ(bound, 0) << output_;
  EXPECT_EQ(shared0.at("WORLD_SIZE"), "2");
  EXPECT_EQ(shared0.at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(shared1.at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(read_env_file(file("env.0")).at("CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(read_env_file(file("env.1")).at("CUDA_VISIBLE_DEVICES"), "3");

  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_EQ(run({"--standalone", "--nproc-per-node", "gpu"}, script), 2);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_NE(output_.find("no GPU is visible"), std::string::npos) << output_;
}

// --share-gpu tells every worker (DTRAIN_SHARE_GPU=1), whose process then
// puts itself on GPU 0 as an NCCL host of its own; with --bind-devices it
// is a contradiction, named before anything starts.
TEST_F(Dtrun, ShareGpuReachesEveryWorkerAndExcludesBindDevices) {
  const std::string script = "env > \"$OUT/env.$RANK\"";
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", "--share-gpu"}, script), 0) << output_;
  EXPECT_EQ(read_env_file(file("env.0")).at("DTRAIN_SHARE_GPU"), "1");
  EXPECT_EQ(read_env_file(file("env.1")).at("DTRAIN_SHARE_GPU"), "1");
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2"}, script), 0) << output_;
  EXPECT_EQ(read_env_file(file("env.1")).count("DTRAIN_SHARE_GPU"), 0u);

  ::setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  const int both =
      run({"--standalone", "--nproc-per-node", "2", "--share-gpu", "--bind-devices"}, script);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(both, 2) << output_;
  EXPECT_NE(output_.find("--bind-devices gives each worker its own GPU, --share-gpu puts them "
                         "all on one: choose one"),
            std::string::npos)
      << output_;
}

TEST_F(Dtrun, StaticRendezvousOfTwoAgentsNumbersRanksByNodeRank) {
  const std::string port = std::to_string(dtrain::testing::free_port());
  const std::string script = "env > \"$OUT/env.$RANK\"";
  auto node1 = start_dtrun(kDtrun,
                           {"--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "2",
                            "--master-addr", "127.0.0.1", "--master-port", port},
                           script, dir(), "node1");
  auto node0 = start_dtrun(kDtrun,
                           {"--nnodes=2", "--node_rank=0", "--nproc_per_node=2",
                            "--master_addr=127.0.0.1", "--master_port=" + port},
                           script, dir(), "node0");
  ASSERT_EQ(node0->wait(30s), 0) << node0->output();
  ASSERT_EQ(node1->wait(30s), 0) << node1->output();
  for (int rank = 0; rank < 4; ++rank) {
    auto env = read_env_file(file("env." + std::to_string(rank)));
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["GROUP_RANK"], std::to_string(rank / 2));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(rank % 2));
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  }
  EXPECT_EQ(read_env_file(file("env.3"))["MASTER_PORT"],
            read_env_file(file("env.0"))["MASTER_PORT"]);
}

// As under torchrun, --rdzv-endpoint wins over --master-addr/--master-port
// with the static backend; dtrun names the values it ignores.
TEST_F(Dtrun, StaticRendezvousAtAnEndpointWarnsOfIgnoredMasterFlags) {
  const std::string port = std::to_string(dtrain::testing::free_port());
  ASSERT_EQ(run({"--nnodes", "1", "--master-addr", "10.9.9.9", "--master-port", "29601",
                 "--rdzv-endpoint", "127.0.0.1:" + port},
                "echo \"$RANK of $WORLD_SIZE\""),
            0)
      << output_;
  EXPECT_NE(output_.find("--master-addr 10.9.9.9 and --master-port 29601 are ignored: the static "
                         "rendezvous meets at --rdzv-endpoint 127.0.0.1:" +
                         port + ", as under torchrun; give one or the other"),
            std::string::npos)
      << output_;
  EXPECT_NE(output_.find("rendezvous store at 127.0.0.1:" + port), std::string::npos) << output_;
  EXPECT_NE(output_.find("0 of 1\n"), std::string::npos) << output_;
  // Values the endpoint agrees with are not ignored, so not named.
  ASSERT_EQ(run({"--master-addr", "127.0.0.1", "--rdzv-endpoint", "127.0.0.1:" + port}, "true"), 0)
      << output_;
  EXPECT_EQ(output_.find("ignored"), std::string::npos) << output_;
}

// Rank 1 fails in the first attempt while rank 0 sleeps: the group is
// stopped and restarted, and the second attempt (restart count 1) succeeds.
TEST_F(Dtrun, AFailedWorkerRestartsTheGroupAndTheJobThenSucceeds) {
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", "--max-restarts", "3"}, R"(
    echo "attempt $TORCHELASTIC_RESTART_COUNT" >> "$OUT/attempts.$RANK"
    if [ "$DTRUN_RESTART_COUNT" = 0 ]; then
      if [ "$RANK" = 1 ]; then
        while [ ! -s "$OUT/sleeper.pid" ]; do sleep 0.05; done
        exit 3
      fi
      echo $$ > "$OUT/sleeper.pid"
      exec sleep 60
    fi
    echo ok > "$OUT/done.$RANK")"),
            0)
      << output_;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_EQ(read_text(file("attempts.0")), "attempt 0\nattempt 1\n");
  EXPECT_EQ(read_text(file("attempts.1")), "attempt 0\nattempt 1\n");
  EXPECT_EQ(read_text(file("done.0")), "ok\n");
  EXPECT_EQ(read_text(file("done.1")), "ok\n");
  EXPECT_FALSE(process_alive(read_pid("sleeper.pid")));
  EXPECT_NE(output_.find("rank 1 (local rank 1) ended with exit code 3"), std::string::npos)
      << output_;
}

TEST_F(Dtrun, WithoutRestartsTheFirstFailureEndsTheJobWithASummary) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run({"--standalone", "--nproc-per-node", "2", "--max-restarts", "0"}, R"(
    if [ "$RANK" = 1 ]; then
      echo "loading data"
      echo "boom: the data file is corrupt" >&2
      exit 7
    fi
    exec sleep 60)"),
            1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "did not fail fast";
  EXPECT_NE(output_.find("job failed after 0 restarts (--max-restarts 0)"), std::string::npos)
      << output_;
  EXPECT_NE(output_.find("first failure: rank 1 (local rank 1 on node 0"), std::string::npos)
      << output_;
  EXPECT_NE(output_.find("ended with exit code 7"), std::string::npos) << output_;
  EXPECT_NE(output_.find("| loading data"), std::string::npos) << output_;
  EXPECT_NE(output_.find("| boom: the data file is corrupt"), std::string::npos) << output_;
}

// Rank 0 (node 0) fails; rank 1 (node 1) fails because of it about 50 ms
// later -- or is stopped first. Every node's summary names rank 0 as the
// first failure (agents wake on worker exits and time-stamp them, rather
// than noticing at their next tick), and lists rank 1 when it failed on its own.
TEST_F(Dtrun, TheSummaryNamesTheRootCauseNotItsVictims) {
  const std::string port = std::to_string(dtrain::testing::free_port());
  const std::string script = R"(
    if [ "$RANK" = 0 ]; then echo "root cause here"; touch "$OUT/marker"; exit 7; fi
    while [ ! -f "$OUT/marker" ]; do sleep 0.01; done
    sleep 0.05
    echo "victim"
    exit 9)";
  std::vector<std::unique_ptr<BackgroundProcess>> nodes;
  for (const char* rank : {"1", "0"}) {
    nodes.push_back(start_dtrun(kDtrun,
                                {"--nnodes", "2", "--node-rank", rank, "--master-port", port},
                                script, dir(), std::string("node") + rank));
  }
  for (auto& node : nodes) {
    EXPECT_EQ(node->wait(30s), 1) << node->output();
    const std::string out = node->output();
    EXPECT_NE(out.find("first failure: rank 0 (local rank 0 on node 0"), std::string::npos) << out;
    EXPECT_NE(out.find("ended with exit code 7"), std::string::npos) << out;
    EXPECT_NE(out.find("    | root cause here"), std::string::npos) << out;
    const auto also = out.find("also failed:");
    if (also != std::string::npos) {
      EXPECT_NE(out.find("also failed: rank 1 (local rank 0 on node 1", also), std::string::npos)
          << out;
    }
  }
}

TEST_F(Dtrun, TheSummaryNamesTheSignalThatKilledAWorker) {
  EXPECT_EQ(run({"--standalone", "--max-restarts", "1"}, "kill -SEGV $$"), 1);
  EXPECT_NE(output_.find("job failed after 1 restart (--max-restarts 1)"), std::string::npos)
      << output_;
  EXPECT_NE(output_.find("ended with signal 11 (SIGSEGV)"), std::string::npos) << output_;
}

// SIGTERM to dtrun reaches every worker's process group: a worker that
// ignores SIGTERM gets SIGKILL after --stop-timeout, a worker's own child
// goes too, and dtrun exits 128 + SIGTERM.
TEST_F(Dtrun, SigtermToDtrunLeavesNoWorkerBehind) {
  auto dtrun = start_dtrun(kDtrun, {"--standalone", "--nproc-per-node", "2", "--stop-timeout", "1"},
                           R"(
    if [ "$RANK" = 0 ]; then
      trap '' TERM
      echo $$ > "$OUT/stubborn.pid"
      while true; do sleep 0.1; done
    fi
    sleep 600 &
    echo $! > "$OUT/grandchild.pid"
    echo $$ > "$OUT/worker.pid"
    wait)",
                           dir());
  ASSERT_TRUE(eventually(
      [&] {
        return !read_text(file("stubborn.pid")).empty() && !read_text(file("worker.pid")).empty();
      },
      20s))
      << dtrun->output();
  std::vector<pid_t> pids{read_pid("stubborn.pid"), read_pid("grandchild.pid"),
                          read_pid("worker.pid")};
  dtrun->signal(SIGTERM);
  EXPECT_EQ(dtrun->wait(20s), 128 + SIGTERM) << dtrun->output();
  for (pid_t pid : pids) {
    EXPECT_TRUE(eventually([&] { return !process_alive(pid); }, 2s)) << "pid " << pid;
  }
}

// Like Ctrl-C twice: the first SIGINT is passed on, the second ends the
// grace period at once (SIGKILL) instead of after --stop-timeout.
TEST_F(Dtrun, ASecondSigintKillsWorkersWithoutWaiting) {
  auto dtrun = start_dtrun(
      kDtrun, {"--standalone", "--stop-timeout", "60"},
      "trap '' INT; echo $$ > \"$OUT/worker.pid\"; while true; do sleep 0.1; done", dir());
  ASSERT_TRUE(eventually([&] { return !read_text(file("worker.pid")).empty(); }, 20s));
  const auto start = std::chrono::steady_clock::now();
  dtrun->signal(SIGINT);
  std::this_thread::sleep_for(300ms);
  dtrun->signal(SIGINT);
  EXPECT_EQ(dtrun->wait(20s), 128 + SIGINT) << dtrun->output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  const pid_t pid = read_pid("worker.pid");
  EXPECT_TRUE(eventually([&] { return !process_alive(pid); }, 2s));
}

// A program that leaves its process group (setsid) is still ended with
// the job: dtrun is its subreaper (Note [No orphans]). The worker lingers a
// moment so that setsid has run before the worker's group is killed.
TEST_F(Dtrun, ProcessesThatLeftTheirGroupEndWithTheJob) {
  ASSERT_EQ(run({"--standalone"}, "setsid sleep 600 & echo $! > \"$OUT/daemon.pid\"; sleep 0.3"), 0)
      << output_;
  const pid_t pid = read_pid("daemon.pid");
  EXPECT_TRUE(eventually([&] { return !process_alive(pid); }, 5s)) << output_;
  EXPECT_NE(output_.find("ended 1 process(es) that workers left behind"), std::string::npos)
      << output_;
}

TEST_F(Dtrun, WorkersDieWithAKilledDtrun) {
  auto dtrun = start_dtrun(kDtrun, {"--standalone", "--nproc-per-node", "2"},
                           "echo $$ > \"$OUT/worker.$RANK\"; exec sleep 600", dir());
  ASSERT_TRUE(eventually(
      [&] { return !read_text(file("worker.0")).empty() && !read_text(file("worker.1")).empty(); },
      20s));
  dtrun->signal(SIGKILL);
  dtrun->wait(5s);
  for (const char* name : {"worker.0", "worker.1"}) {
    const pid_t pid = read_pid(name);
    EXPECT_TRUE(eventually([&] { return !process_alive(pid); }, 5s)) << name;
  }
}

TEST_F(Dtrun, RedirectsSendOutputToOneLogFilePerRank) {
  const std::string logs = file("logs");
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", "--rdzv-id", "job1", "--log-dir", logs,
                 "--redirects", "3"},
                "echo \"out of $RANK\"; echo \"err of $RANK\" >&2"),
            0)
      << output_;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = read_text(logs + "/job1/round_0/rank_" + std::to_string(rank) + ".log");
    EXPECT_NE(log.find("out of " + std::to_string(rank)), std::string::npos) << log;
    EXPECT_NE(log.find("err of " + std::to_string(rank)), std::string::npos) << log;
  }
  EXPECT_EQ(output_.find("out of"), std::string::npos) << output_;
}

TEST_F(Dtrun, TeePrefixesConsoleLinesAndTheFilterHidesOtherRanks) {
  const std::string logs = file("logs");
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", "--rdzv-id", "job2", "--log-dir", logs,
                 "--tee", "1", "--local-ranks-filter", "1"},
                "echo \"hello from $RANK\""),
            0)
      << output_;
  EXPECT_NE(output_.find("[1]:hello from 1\n"), std::string::npos) << output_;
  EXPECT_EQ(output_.find("hello from 0"), std::string::npos) << output_;
  // Filtered from the console, still in its file.
  EXPECT_EQ(read_text(logs + "/job2/round_0/rank_0.log"), "hello from 0\n");
}

TEST_F(Dtrun, LogDirAloneKeepsEveryRanksOutputAndTheConsole) {
  const std::string logs = file("logs");
  ASSERT_EQ(run({"--standalone", "--rdzv-id", "job3", "--log-dir", logs}, "echo plain"), 0)
      << output_;
  EXPECT_EQ(read_text(logs + "/job3/round_0/rank_0.log"), "plain\n");
  EXPECT_NE(output_.find("plain\n"), std::string::npos);
}

// --help shows the flags of a first job and names the topics of the rest;
// --help-all lists torchrun's flags.
TEST_F(Dtrun, HelpReadsLikeTorchrun) {
  ASSERT_EQ(run({"--help"}, ""), 0);
  for (const char* flag :
       {"--nnodes", "--nproc-per-node", "--master-addr", "--rdzv-backend", "--rdzv-endpoint",
        "--rdzv-id", "--max-restarts", "--standalone", "--help TOPIC"}) {
    EXPECT_NE(output_.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(output_.find("--local-ranks-filter"), std::string::npos) << output_;
  ASSERT_EQ(run({"--help-all"}, ""), 0);
  for (const char* flag :
       {"--nnodes", "--nproc-per-node", "--node-rank", "--master-addr", "--master-port",
        "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--max-restarts", "--monitor-interval",
        "--standalone", "--log-dir", "--redirects", "--tee", "--local-ranks-filter"}) {
    EXPECT_NE(output_.find(flag), std::string::npos) << flag;
  }
}

TEST_F(Dtrun, VersionNamesDtrainsBuild) {
  ASSERT_EQ(run({"--version"}, "echo the script must not run"), 0) << output_;
  EXPECT_EQ(output_, dtrain::util::build_info().describe() + "\n");
}

struct FlagCase {
  std::vector<std::string> flags;
  std::string message;
};

TEST_F(Dtrun, BadOrContradictoryFlagsFailBeforeAnythingStarts) {
  const std::vector<FlagCase> cases{
      {{"--nprocs", "2"}, "unknown flag '--nprocs'"},
      {{"--nnodes", "3:2"}, "MIN (3) is larger than MAX (2)"},
      {{"--nnodes", "1:2"}, "needs an elastic rendezvous"},
      {{"--nnodes", "2", "--node-rank", "2"}, "--node-rank 2 is outside --nnodes 2"},
      {{"--nproc-per-node", "two"}, "--nproc-per-node 'two'"},
      {{"--rdzv-backend", "c10d"}, "needs --rdzv-endpoint"},
      {{"--rdzv-backend", "etcd"}, "is not one of static, c10d"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--master-addr", "h"},
       "belong to the static rendezvous"},
      {{"--standalone", "--rdzv-endpoint", "h:1"}, "cannot be combined"},
      {{"--standalone", "--nnodes", "2"}, "one-node job"},
      {{"--redirects", "5"}, "expected 0 (none), 1 (stdout), 2 (stderr) or 3 (both)"},
      {{"--tee", "0:1", "--nproc-per-node", "1", "--local-ranks-filter", "3"},
       "names local rank 3"},
      {{"--rdzv-conf", "join_timeout=soon"}, "join_timeout=soon"},
      {{"--rdzv-conf", "colour=blue"}, "unknown key 'colour'"},
      // Note [IPv6 address syntax]: what cannot be read one way only.
      {{"--master-addr", "::1:29500"}, "--master-addr '::1:29500': a ':' but no IPv6 address"},
      {{"--master-addr", "[::1"}, "--master-addr '[::1': '[' is not closed by ']'"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "::1:29400"},
       "endpoint '::1:29400': more than one ':' (an IPv6 address goes in brackets: "
       "[::1]:29500); expected HOST:PORT, or [IPV6]:PORT"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "[::1]29400"}, "where ':' and a port belong"},
      {{"--local-addr", "fd00::1:x"}, "--local-addr 'fd00::1:x'"},
      // Note [Duration range]: every duration, named as given.
      {{"--stop-timeout", "1e20"},
       "--stop-timeout '1e20': expected a number of seconds from 0.001 (1 ms) to 604800 (one "
       "week)"},
      {{"--stop-timeout", "0"}, "--stop-timeout '0': expected a number of seconds"},
      {{"--monitor-interval", "-1"}, "--monitor-interval '-1': expected a number of seconds"},
      {{"--monitor-interval", "nan"}, "--monitor-interval 'nan': expected a number of seconds"},
      {{"--rdzv-conf", "join_timeout=1e-9"},
       "--rdzv-conf join_timeout=1e-9: expected a number of seconds from 0.001 (1 ms)"},
      {{"--rdzv-conf", "heartbeat_timeout=1e20"}, "--rdzv-conf heartbeat_timeout=1e20: expected"},
      {{"--nnodes", "2", "--monitor-interval", "20"},
       "--monitor-interval 20 is more than half of --rdzv-conf heartbeat_timeout (30 s)"},
      {{"--log-dir", "/proc/dtrun-cannot-be-here"},
       "--log-dir '/proc/dtrun-cannot-be-here': cannot create the directory ("},
  };
  for (const FlagCase& c : cases) {
    std::vector<std::string> flags = c.flags;
    EXPECT_EQ(run(flags, "touch \"$OUT/ran\""), 2) << output_;
    EXPECT_EQ(output_.rfind("dtrun: error: ", 0), 0u) << output_;
    EXPECT_NE(output_.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << output_;
    EXPECT_FALSE(std::filesystem::exists(file("ran"))) << output_;
  }
  EXPECT_EQ(run({"--standalone"}, ""), 2);
  EXPECT_NE(output_.find("no program to run"), std::string::npos) << output_;
  std::vector<std::string> argv{kDtrun, "--standalone", "no-such-program-dtrun-test"};
  BackgroundProcess missing(argv, file("missing.out"));
  EXPECT_EQ(missing.wait(10s), 2);
  EXPECT_NE(missing.output().find("'no-such-program-dtrun-test' was not found on PATH"),
            std::string::npos)
      << missing.output();
}

// A c10d endpoint whose port another program holds (here: a socket that
// accepts connections and never answers) is named as such, rather than
// waited on as if another agent hosted the store there.
TEST_F(Dtrun, AnEndpointTakenByAnotherProgramIsNamed) {
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(dtrain::testing::free_port());
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(holder, 8), 0);
  const std::string endpoint = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  EXPECT_EQ(run({"--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint}, "touch \"$OUT/ran\"", 60s),
            1)
      << output_;
  ::close(holder);
  EXPECT_NE(output_.find("the rendezvous endpoint " + endpoint +
                         " is taken on this host (store cannot listen on"),
            std::string::npos)
      << output_;
  EXPECT_NE(output_.find("is not a dtrun rendezvous store"), std::string::npos) << output_;
  EXPECT_FALSE(std::filesystem::exists(file("ran")));
}

// A node whose agent runs another build of dtrain (played here by the test,
// joining the rendezvous with its own record) ends the job at once, naming
// both builds, before any worker starts and without using up restarts.
TEST_F(Dtrun, NodesOfAnotherBuildEndTheJobBeforeAnyWorkerStarts) {
  dtrain::store::TcpStoreServer server(0);
  const std::string endpoint = "127.0.0.1:" + std::to_string(server.port());
  auto dtrun = start_dtrun(kDtrun,
                           {"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                            "--rdzv-id", "mixed", "--max-restarts", "3"},
                           "touch \"$OUT/ran\"", dir());
  auto store = std::make_shared<dtrain::store::PrefixStore>(
      "dtrun/mixed", std::make_shared<dtrain::store::TcpStore>(
                         dtrain::store::TcpStoreOptions().port(server.port()).timeout(30s)));
  dtrain::launch::Rendezvous other(store, {.nnodes = {2, 2}});
  const std::string old_build = "dtrain 0.0.9 (source 0123456789ab), LibTorch 2.10.0";
  const dtrain::launch::JoinResult joined = other.join(
      [&] {
        dtrain::launch::NodeInfo info;
        info.addr = "127.0.0.1";
        info.host = "old-node";
        info.build = old_build;
        return info;
      },
      [] { return false; });
  ASSERT_TRUE(joined.membership.has_value());
  EXPECT_EQ(dtrun->wait(30s), 1) << dtrun->output();
  const std::string output = dtrun->output();
  EXPECT_NE(output.find("the nodes' dtrun agents run different builds of dtrain"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("(old-node) \"" + old_build + "\""), std::string::npos) << output;
  EXPECT_NE(output.find("\"" + dtrain::util::build_info().identity() + "\""), std::string::npos)
      << output;
  EXPECT_NE(output.find("job failed after 0 restart(s)"), std::string::npos) << output;
  EXPECT_FALSE(std::filesystem::exists(file("ran")));
  const auto outcome = other.outcome(joined.round);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->kind, dtrain::launch::Outcome::Kind::kFatal);
}

}  // namespace

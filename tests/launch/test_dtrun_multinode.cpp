// dtrun across two nodes: two network namespaces joined by a veth pair
// (10.77.0.1 and 10.77.0.2), one agent in each, meeting through the first
// one's address, with workers that all-reduce over Gloo across both; the
// same over IPv6 (fd77:1::1 and fd77:1::2). Then
// elasticity (--nnodes 1:2): one node's agent is killed mid-run and the
// other re-forms the group alone; a node started late is admitted at the
// next round, and one joining a training job costs it no steps.
//
// Needs root (CAP_NET_ADMIN) and iproute2; skips, saying why, without them.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>
#include <thread>

#include "background_process.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::eventually;
using dtrain::testing::non_empty_lines;
using dtrain::testing::process_alive;
using dtrain::testing::read_text;
using dtrain::testing::TempDir;

const std::string kDtrun = DTRAIN_DTRUN_PATH;
const std::string kWorker = DTRAIN_ALLREDUCE_WORKER_PATH;
const std::string kTrainPointNet2 = DTRAIN_TRAIN_POINTNET2_PATH;

// Runs a shell command; returns its exit code and appends its output to `log`.
int sh(const std::string& command, std::string* log = nullptr) {
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    return -1;
  }
  char buffer[512];
  std::string output;
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
  }
  const int status = ::pclose(pipe);
  if (log != nullptr) {
    *log += "$ " + command + "\n" + output;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Node {
  std::string netns;
  std::string veth;
  std::string addr;
};

class TwoNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "network namespaces need root";
    }
    ip_ = "";
    for (const char* candidate : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
      if (::access(candidate, X_OK) == 0) {
        ip_ = candidate;
        break;
      }
    }
    if (ip_.empty()) {
      GTEST_SKIP() << "iproute2's ip is not installed";
    }
    remove_stale_namespaces();
    const std::string id = std::to_string(::getpid());
    a_ = {"dtrun" + id + "a", "dtv" + id + "a", "10.77.0.1"};
    b_ = {"dtrun" + id + "b", "dtv" + id + "b", "10.77.0.2"};
    std::string log;
    const std::vector<std::string> setup{
        ip_ + " netns add " + a_.netns,
        ip_ + " netns add " + b_.netns,
        ip_ + " link add " + a_.veth + " type veth peer name " + b_.veth,
        ip_ + " link set " + a_.veth + " netns " + a_.netns,
        ip_ + " link set " + b_.veth + " netns " + b_.netns,
        ip_ + " -n " + a_.netns + " addr add " + a_.addr + "/24 dev " + a_.veth,
        ip_ + " -n " + b_.netns + " addr add " + b_.addr + "/24 dev " + b_.veth,
        ip_ + " -n " + a_.netns + " link set " + a_.veth + " up",
        ip_ + " -n " + b_.netns + " link set " + b_.veth + " up",
        ip_ + " -n " + a_.netns + " link set lo up",
        ip_ + " -n " + b_.netns + " link set lo up",
    };
    made_ = true;
    for (const std::string& command : setup) {
      if (sh(command, &log) != 0) {
        GTEST_SKIP() << "cannot make two network namespaces here:\n" << log;
      }
    }
  }

  // Namespaces of an earlier run of this test that was killed before its
  // TearDown (they are named after its pid, so a dead pid marks them).
  void remove_stale_namespaces() {
    std::string list;
    sh(ip_ + " netns list", &list);
    const std::regex name("^(dtrun(\\d+)[ab])\\b");
    for (const std::string& line : non_empty_lines(list)) {
      std::smatch match;
      if (std::regex_search(line, match, name) && !process_alive(std::stoi(match[2]))) {
        sh(ip_ + " netns del " + match[1].str());
      }
    }
  }

  void TearDown() override {
    if (made_) {
      // Deleting a namespace deletes its end of the veth pair, and so the pair.
      sh(ip_ + " netns del " + a_.netns);
      sh(ip_ + " netns del " + b_.netns);
    }
  }

  // dtrun inside `node`'s namespace; Gloo binds the namespace's own interface.
  // The workers are the all-reduce worker taking `steps` steps, or `worker`.
  std::unique_ptr<BackgroundProcess> agent(const Node& node, const std::vector<std::string>& flags,
                                           int steps, const std::string& name,
                                           const std::string& endpoint_host = "",
                                           const std::vector<std::string>& worker = {}) {
    std::vector<std::string> argv{ip_,        "netns",        "exec",
                                  node.netns, "/usr/bin/env", "GLOO_SOCKET_IFNAME=" + node.veth,
                                  kDtrun};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--rdzv-backend", "c10d", "--rdzv-endpoint",
                             (endpoint_host.empty() ? a_.addr : endpoint_host) + ":29477",
                             "--rdzv-id", "two-nodes", "--monitor-interval", "0.05"});
    if (worker.empty()) {
      argv.insert(argv.end(),
                  {kWorker, "--out", dir_.path().string(), "--steps", std::to_string(steps)});
    } else {
      argv.insert(argv.end(), worker.begin(), worker.end());
    }
    return std::make_unique<BackgroundProcess>(argv, dir_.file(name + ".out"));
  }

  std::vector<std::string> started() const {
    return non_empty_lines(read_text(dir_.file("started")));
  }
  int started_with_world(int world) const {
    int count = 0;
    for (const auto& line : started()) {
      count += line.find(" world " + std::to_string(world) + " ") != std::string::npos;
    }
    return count;
  }
  std::string result() const { return read_text(dir_.file("result")); }

  std::string ip_;
  Node a_, b_;
  bool made_ = false;
  TempDir dir_;
};

// As in the seed's command lines, the first node names the endpoint
// "localhost" and the second names its address. The first node joins first
// (group rank 0); its workers' MASTER_ADDR is loopback, the second's is the
// address they reached the store at.
TEST_F(TwoNodes, WorkersOnBothNodesAllReduceTogether) {
  const std::vector<std::string> flags{"--nnodes", "2", "--nproc-per-node", "2"};
  auto node_a = agent(a_, flags, 5, "a", "localhost");
  ASSERT_TRUE(eventually(
      [&] {
        return node_a->output().find("started ranks") != std::string::npos ||
               node_a->output().find("hosted by this agent") != std::string::npos;
      },
      20s))
      << node_a->output();
  std::this_thread::sleep_for(300ms);  // let it take the first ticket
  auto node_b = agent(b_, flags, 5, "b");
  EXPECT_EQ(node_a->wait(60s), 0) << node_a->output();
  EXPECT_EQ(node_b->wait(60s), 0) << node_b->output();
  // Ranks 0..3 over two nodes: 1 + 2 + 3 + 4.
  EXPECT_EQ(result(), "world=4 restart=0 sum=10 ok\n") << node_a->output() << node_b->output();
  EXPECT_EQ(started_with_world(4), 4) << read_text(dir_.file("started"));
  for (const auto& line : started()) {
    const bool on_a = line.find("started rank 0 ") == 0 || line.find("started rank 1 ") == 0;
    EXPECT_NE(line.find(on_a ? "master 127.0.0.1" : "master 10.77.0.1"), std::string::npos) << line;
  }
}

// The same over IPv6: each veth gets an IPv6 address beside its IPv4 one,
// the endpoint is the first node's in brackets, and both nodes' workers get
// it, bare, as MASTER_ADDR (the route to it, not the IPv4 address, decides).
TEST_F(TwoNodes, WorkersMeetOverIpv6) {
  std::string log;
  for (const auto& [node, address] : {std::pair{a_, "fd77:1::1"}, std::pair{b_, "fd77:1::2"}}) {
    if (sh(ip_ + " -n " + node.netns + " addr add " + address + "/64 dev " + node.veth + " nodad",
           &log) != 0) {
      GTEST_SKIP() << "cannot give the veths IPv6 addresses here:\n" << log;
    }
  }
  const std::vector<std::string> flags{"--nnodes", "2", "--nproc-per-node", "1"};
  auto node_a = agent(a_, flags, 3, "a", "[fd77:1::1]");
  ASSERT_TRUE(eventually(
      [&] { return node_a->output().find("hosted by this agent") != std::string::npos; }, 20s))
      << node_a->output();
  EXPECT_NE(node_a->output().find("rendezvous store at [fd77:1::1]:29477"), std::string::npos)
      << node_a->output();
  auto node_b = agent(b_, flags, 3, "b", "[fd77:1::1]");
  EXPECT_EQ(node_a->wait(60s), 0) << node_a->output();
  EXPECT_EQ(node_b->wait(60s), 0) << node_b->output();
  EXPECT_EQ(result(), "world=2 restart=0 sum=3 ok\n") << node_a->output() << node_b->output();
  ASSERT_EQ(started().size(), 2u) << read_text(dir_.file("started"));
  for (const auto& line : started()) {
    EXPECT_TRUE(line.ends_with(" master fd77:1::1")) << line;
  }
}

TEST_F(TwoNodes, ASurvivorReformsTheGroupWhenTheOtherNodeIsKilled) {
  const std::vector<std::string> flags{
      "--nnodes",         "1:2",
      "--nproc-per-node", "1",
      "--max-restarts",   "2",
      "--rdzv-conf",      "last_call_timeout=2,heartbeat_timeout=2,join_timeout=30"};
  auto node_a = agent(a_, flags, 40, "a");
  auto node_b = agent(b_, flags, 40, "b");
  ASSERT_TRUE(eventually([&] { return started_with_world(2) == 2; }, 60s))
      << node_a->output() << node_b->output();
  // B's worker, to check it does not outlive its agent.
  pid_t b_worker = -1;
  const std::regex line("started rank (\\d) world 2 restart 0 pid (\\d+) ");
  const std::string b_rank =
      read_text(dir_.file("b.out")).find("started ranks 1..1") != std::string::npos ? "1" : "0";
  for (const auto& text : started()) {
    std::smatch match;
    if (std::regex_search(text, match, line) && match[1] == b_rank) {
      b_worker = std::stoi(match[2]);
    }
  }
  node_b->signal(SIGKILL);  // ip netns exec exec()s dtrun: this is B's agent
  node_b->wait(10s);
  EXPECT_EQ(node_a->wait(90s), 0) << node_a->output();
  EXPECT_EQ(result(), "world=1 restart=1 sum=1 ok\n") << node_a->output();
  ASSERT_GT(b_worker, 0) << read_text(dir_.file("started"));
  EXPECT_TRUE(eventually([&] { return !process_alive(b_worker); }, 5s));
}

TEST_F(TwoNodes, ANodeStartedLateIsAdmittedAtTheNextRound) {
  const std::vector<std::string> flags{
      "--nnodes",       "1:2", "--nproc-per-node", "1",
      "--max-restarts", "0",   "--rdzv-conf",      "last_call_timeout=1,join_timeout=30"};
  auto node_a = agent(a_, flags, 40, "a");
  ASSERT_TRUE(eventually([&] { return started_with_world(1) == 1; }, 60s)) << node_a->output();
  auto node_b = agent(b_, flags, 40, "b");
  EXPECT_EQ(node_b->wait(90s), 0) << node_b->output();
  EXPECT_EQ(node_a->wait(30s), 0) << node_a->output();
  // Re-forming to admit a node uses up no restart (--max-restarts 0 here).
  EXPECT_EQ(result(), "world=2 restart=0 sum=3 ok\n") << node_a->output() << node_b->output();
  EXPECT_NE(node_a->output().find("a node is waiting to join"), std::string::npos)
      << node_a->output();
}

// What elastic training needs of dtrun and the apps together: node A trains
// alone with --checkpoint; when node B joins, dtrun ends A's round with
// SIGTERM, A's worker stops after its step with a checkpoint there, and
// the next round's two workers resume from it: the rest of the interrupted
// epoch split between them (or, if the stop fell between epochs, the next
// epoch), every epoch in the report once.
TEST_F(TwoNodes, ANodeJoiningMidTrainingCostsNoSteps) {
  // The worker stopped to admit node b finishes its step and writes its
  // checkpoint before it exits; on a loaded machine that may take longer
  // than dtrun's default 10 s, which would then kill it mid-write. The stop
  // waits on the worker's exit, so a long grace costs nothing when it is quick.
  const std::vector<std::string> flags{"--nnodes",         "1:2",
                                       "--nproc-per-node", "1",
                                       "--max-restarts",   "0",
                                       "--stop-timeout",   "120",
                                       "--rdzv-conf",      "last_call_timeout=1,join_timeout=30"};
  const std::string csv = dir_.file("report.csv");
  std::vector<std::string> train{kTrainPointNet2};
  for (const auto& arg : dtrain::testing::small_synthetic_run(dir_.file("shapes"), csv)) {
    train.push_back(arg);
  }
  // (a flag given twice takes its last value)
  train.insert(train.end(), {"--batch-size", "2", "--epochs", "12", "--checkpoint",
                             dir_.file("model.pt"), "--resume"});
  auto node_a = agent(a_, flags, 0, "a", "", train);
  ASSERT_TRUE(
      eventually([&] { return node_a->output().find("epoch 2/12 [") != std::string::npos; }, 90s))
      << node_a->output();
  auto node_b = agent(b_, flags, 0, "b", "", train);
  EXPECT_EQ(node_b->wait(150s), 0) << node_b->output();
  EXPECT_EQ(node_a->wait(30s), 0) << node_a->output();
  const std::string output = node_a->output() + node_b->output();
  std::smatch stop;
  ASSERT_TRUE(std::regex_search(output, stop,
                                std::regex(R"(stopped by signal 15 after (step \d+ of )?epoch)")))
      << output;
  EXPECT_NE(output.find("resumed from " + dir_.file("model.pt") + " after "), std::string::npos)
      << output;
  if (stop[1].matched) {
    // The rest of the epoch goes to the two workers; or, when the stop fell
    // so near the epoch's end that fewer than 2 clouds are left for each
    // (batch norm's minimum), the epoch ends there.
    const bool split =
        output.find(" clouds not reached before the restart, split among 2 process(es)") !=
        std::string::npos;
    const bool too_few = output.find(
                             " clouds were not reached before the restart, too few to "
                             "split among 2 process(es)") != std::string::npos;
    EXPECT_TRUE(split || too_few) << output;
  }
  // The epoch that ended at the stop lacks the clouds it left untrained.
  size_t short_epoch = 0;
  int untrained = 0;
  std::smatch too_few;
  if (std::regex_search(output, too_few,
                        std::regex(R"(epoch (\d+): (\d+) clouds were not reached before the )"
                                   R"(restart, too few to split)"))) {
    short_epoch = std::stoul(too_few[1]);
    untrained = std::stoi(too_few[2]);
  }
  const auto rows = dtrain::testing::read_csv(csv);
  ASSERT_EQ(rows.size(), 13u) << output;
  for (size_t epoch = 1; epoch <= 12; ++epoch) {
    EXPECT_EQ(rows[epoch][0], std::to_string(epoch));
    EXPECT_EQ(rows[epoch][1], std::to_string(48 - (epoch == short_epoch ? untrained : 0)))
        << "epoch " << epoch << ": every cloud once"
        << (epoch == short_epoch ? ", but those too few to split" : "") << "\n"
        << output;
  }
}

}  // namespace

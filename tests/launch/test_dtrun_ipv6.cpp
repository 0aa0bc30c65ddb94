// dtrun with an IPv6 master on one machine, run as users run it: its
// workers (allreduce_worker.cpp) meet through init_process_group's env://
// and all-reduce over Gloo. MASTER_ADDR reaches them bare, as torchrun
// exports it; dtrun's own lines print the address in brackets. Skips
// without ::1 (ipv6.h), except --standalone, which every machine runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "background_process.h"
#include "ipv6.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::non_empty_lines;
using dtrain::testing::read_text;
using dtrain::testing::TempDir;

const std::string kDtrun = DTRAIN_DTRUN_PATH;
const std::string kWorker = DTRAIN_ALLREDUCE_WORKER_PATH;

class DtrunIpv6 : public ::testing::Test {
 protected:
  // Runs dtrun with `flags` and two all-reducing workers to its end.
  int run(const std::vector<std::string>& flags, const std::string& name = "dtrun") {
    std::vector<std::string> argv{kDtrun, "--nproc-per-node", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(),
                {kWorker, "--out", dir_.path().string(), "--steps", "3", "--step-ms", "0"});
    BackgroundProcess dtrun(argv, dir_.file(name + ".out"), {{"OMP_NUM_THREADS", "1"}});
    const int code = dtrun.wait(60s);
    output_ = dtrun.output();
    return code;
  }
  // Each worker's "master ADDR" (its MASTER_ADDR), one a line.
  std::vector<std::string> masters() const {
    std::vector<std::string> found;
    for (const std::string& line : non_empty_lines(read_text(dir_.file("started")))) {
      found.push_back(line.substr(line.find(" master ") + 8));
    }
    return found;
  }
  std::string result() const { return read_text(dir_.file("result")); }

  TempDir dir_;
  std::string output_;
};

TEST_F(DtrunIpv6, StaticRendezvousWithABareMasterAddr) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::string port = std::to_string(dtrain::testing::free_port());
  ASSERT_EQ(run({"--master-addr", "::1", "--master-port", port}), 0) << output_;
  EXPECT_EQ(result(), "world=2 restart=0 sum=3 ok\n") << output_;
  EXPECT_EQ(masters(), (std::vector<std::string>{"::1", "::1"})) << output_;
  EXPECT_NE(output_.find("rendezvous store at [::1]:" + port), std::string::npos) << output_;
  EXPECT_NE(output_.find("master [::1]:"), std::string::npos) << output_;
}

TEST_F(DtrunIpv6, BracketedMasterAddrIsTheSame) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::string port = std::to_string(dtrain::testing::free_port());
  ASSERT_EQ(run({"--master_addr=[::1]", "--master_port=" + port}), 0) << output_;
  EXPECT_EQ(masters(), (std::vector<std::string>{"::1", "::1"})) << output_;
}

TEST_F(DtrunIpv6, StoreRendezvousAtABracketedEndpoint) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::string endpoint = "[::1]:" + std::to_string(dtrain::testing::free_port());
  ASSERT_EQ(run({"--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint}), 0) << output_;
  EXPECT_EQ(result(), "world=2 restart=0 sum=3 ok\n") << output_;
  EXPECT_EQ(masters(), (std::vector<std::string>{"::1", "::1"})) << output_;
  EXPECT_NE(output_.find("rendezvous store at " + endpoint), std::string::npos) << output_;
}

// The store's server listens on both families now; the one-node job that
// names it 127.0.0.1 runs as before.
TEST_F(DtrunIpv6, StandaloneStillRunsOverIpv4) {
  ASSERT_EQ(run({"--standalone"}), 0) << output_;
  EXPECT_EQ(result(), "world=2 restart=0 sum=3 ok\n") << output_;
  EXPECT_EQ(masters(), (std::vector<std::string>{"127.0.0.1", "127.0.0.1"})) << output_;
}

}  // namespace

// dtrun's elastic membership with two agents on loopback: a node joining
// late, a node vanishing.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

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
using dtrain::testing::read_text;
using dtrain::testing::start_dtrun;

// Two agents of one elastic job (--nnodes 1:2) on loopback.
class DtrunElastic : public Dtrun {
 protected:
  std::vector<std::string> flags(const std::string& extra_conf = "") {
    return {"--nnodes",           "1:2",
            "--nproc-per-node",   "1",
            "--rdzv-backend",     "c10d",
            "--rdzv-endpoint",    "127.0.0.1:" + port_,
            "--rdzv-id",          "elastic",
            "--max-restarts",     "2",
            "--monitor-interval", "0.05",
            "--rdzv-conf",        "last_call_timeout=0.5,heartbeat_timeout=1" + extra_conf};
  }
  std::string port_ = std::to_string(dtrain::testing::free_port());
};

// The first agent starts alone; the second, arriving late, waits, and the
// group re-forms with both at the next round (no restart is used up).
TEST_F(DtrunElastic, ALateNodeIsAdmittedAtTheNextRound) {
  const std::string script = R"(
    echo "$WORLD_SIZE/$TORCHELASTIC_RESTART_COUNT" >> "$OUT/worlds"
    if [ "$WORLD_SIZE" = 1 ]; then exec sleep 60; fi)";
  auto first = start_dtrun(kDtrun, flags(), script, dir(), "first");
  ASSERT_TRUE(eventually([&] { return read_text(file("worlds")) == "1/0\n"; }, 20s))
      << first->output();
  auto late = start_dtrun(kDtrun, flags(), script, dir(), "late");
  EXPECT_EQ(late->wait(30s), 0) << late->output();
  EXPECT_EQ(first->wait(30s), 0) << first->output();
  EXPECT_EQ(read_text(file("worlds")), "1/0\n2/0\n2/0\n");
  EXPECT_NE(first->output().find("a node is waiting to join"), std::string::npos)
      << first->output();
}

// Both agents run; one is killed outright. The survivor notices the silence
// (or its worker's failure), and re-forms the group alone.
TEST_F(DtrunElastic, ASurvivorReformsTheGroupWhenANodeVanishes) {
  const std::string script = R"(
    echo "$WORLD_SIZE" >> "$OUT/worlds.$GROUP_RANK.$TORCHELASTIC_RESTART_COUNT"
    echo $$ > "$OUT/pid.$GROUP_RANK.$TORCHELASTIC_RESTART_COUNT"
    if [ "$WORLD_SIZE" = 2 ]; then exec sleep 60; fi)";
  auto a = start_dtrun(kDtrun, flags(), script, dir(), "a");
  auto b = start_dtrun(kDtrun, flags(), script, dir(), "b");
  ASSERT_TRUE(eventually(
      [&] {
        return read_text(file("worlds.0.0")) == "2\n" && read_text(file("worlds.1.0")) == "2\n";
      },
      20s))
      << a->output() << b->output();
  // Kill whichever agent does not host the store (a hosts it: it bound the port first
  // unless b won the race; the host's death would end the job for everyone).
  const bool a_hosts = a->output().find("hosted by this agent") != std::string::npos;
  BackgroundProcess& victim = a_hosts ? *b : *a;
  BackgroundProcess& survivor = a_hosts ? *a : *b;
  victim.signal(SIGKILL);
  victim.wait(5s);
  EXPECT_EQ(survivor.wait(30s), 0) << survivor.output();
  // Round 1: the survivor alone, as group rank 0 with restart count 1.
  EXPECT_EQ(read_text(file("worlds.0.1")), "1\n") << survivor.output();
  for (const char* name : {"pid.0.0", "pid.1.0"}) {
    const pid_t pid = read_pid(name);
    EXPECT_TRUE(eventually([&] { return !process_alive(pid); }, 5s)) << name;
  }
}

}  // namespace

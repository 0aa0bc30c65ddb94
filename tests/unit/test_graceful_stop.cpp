// train::GracefulStop: a SIGTERM or SIGINT is recorded instead of ending
// the process; repeated SIGTERMs are recorded once; a second SIGINT ends the
// process as SIGINT does. Each case runs in a forked child, so the test
// process keeps its own handlers.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "dtrain/train/graceful_stop.h"
#include "test_support.h"

namespace {

using dtrain::train::GracefulStop;

// How a child running `body` ended: exit 0 when it returned true.
int status_in_child(const std::function<bool()>& body) {
  return dtrain::testing::run_in_child(body).status;
}

TEST(GracefulStop, NothingRecordedBeforeASignal) {
  const int status = status_in_child([] {
    GracefulStop::install();
    return GracefulStop::signal() == 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(GracefulStop, SigtermIsRecordedAndRepeatsDoNotEndTheProcess) {
  const int status = status_in_child([] {
    GracefulStop::install();
    ::raise(SIGTERM);
    ::raise(SIGTERM);
    ::raise(SIGTERM);
    return GracefulStop::signal() == SIGTERM;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(GracefulStop, ASecondSigintEndsTheProcess) {
  const int status = status_in_child([] {
    GracefulStop::install();
    ::raise(SIGINT);
    if (GracefulStop::signal() != SIGINT) {
      return false;
    }
    ::raise(SIGINT);
    return true;  // not reached: the second SIGINT ends the child
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
}

// Without install(), SIGTERM keeps its default action.
TEST(GracefulStop, WithoutInstallSigtermEndsTheProcess) {
  const int status = status_in_child([] {
    ::raise(SIGTERM);
    return true;
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace

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

namespace {

using dtrain::train::GracefulStop;

// Runs `body` in a child process and returns its wait status. The child
// exits 0 when `body` returns true, 1 otherwise.
int in_child(const std::function<bool()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::_exit(body() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(GracefulStop, NothingRecordedBeforeASignal) {
  const int status = in_child([] {
    GracefulStop::install();
    return GracefulStop::signal() == 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(GracefulStop, SigtermIsRecordedAndRepeatsDoNotEndTheProcess) {
  const int status = in_child([] {
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
  const int status = in_child([] {
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
  const int status = in_child([] {
    ::raise(SIGTERM);
    return true;
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace

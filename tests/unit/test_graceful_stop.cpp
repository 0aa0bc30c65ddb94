// train::GracefulStop: a SIGTERM or SIGINT (in a Slurm job also the requeue
// signal) is recorded instead of ending the process; repeated SIGTERMs are
// recorded once; a second SIGINT ends the process as SIGINT does. Each case runs in a forked child,
// so the test process keeps its own handlers.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <utility>

#include "dtrain/train/graceful_stop.h"
#include "dtrain/train/slurm_requeue.h"
#include "expect_error.h"
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

// In a Slurm job the requeue signal (train/slurm_requeue.h) is recorded too:
// SIGUSR1 by default, or the one DTRAIN_REQUEUE_SIGNAL names.
TEST(GracefulStop, InASlurmJobTheRequeueSignalIsRecorded) {
  for (const auto& [named, sig] : {std::pair<const char*, int>{"", SIGUSR1},
                                   {"USR2", SIGUSR2},
                                   {"SIGHUP", SIGHUP},
                                   {"12", SIGUSR2}}) {
    const int status = status_in_child([named = named, sig = sig] {
      ::setenv("SLURM_JOB_ID", "42", 1);
      ::setenv(dtrain::train::kRequeueSignalVariable, named, 1);
      GracefulStop::install();
      ::raise(sig);
      return dtrain::train::requeue_signal() == sig && GracefulStop::signal() == sig;
    });
    ASSERT_TRUE(WIFEXITED(status)) << named << ": the child died of signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << named;
  }
}

// Outside a Slurm job, or with DTRAIN_REQUEUE_SIGNAL=none, SIGUSR1 keeps
// its default action; a name that is no signal is refused by name.
TEST(GracefulStop, NoRequeueSignalOutsideSlurmOrWithNone) {
  for (const char* job : {"", "42"}) {
    const int status = status_in_child([job] {
      ::setenv("SLURM_JOB_ID", job, 1);
      ::setenv(dtrain::train::kRequeueSignalVariable, *job == '\0' ? "" : "none", 1);
      GracefulStop::install();
      ::raise(SIGUSR1);
      return true;
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << "SLURM_JOB_ID='" << job << "'";
    EXPECT_EQ(WTERMSIG(status), SIGUSR1);
  }
  const int status = status_in_child([] {
    ::setenv("SLURM_JOB_ID", "42", 1);
    ::setenv(dtrain::train::kRequeueSignalVariable, "USR3", 1);
    const std::string error = dtrain::testing::error_of([] { dtrain::train::requeue_signal(); });
    return error.find("DTRAIN_REQUEUE_SIGNAL='USR3' is not a signal to requeue on") !=
           std::string::npos;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace

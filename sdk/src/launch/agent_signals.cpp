#include "agent_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "dtrain/util/errors.h"

namespace dtrain::launch::signals {

namespace {

volatile sig_atomic_t g_first = 0;
volatile sig_atomic_t g_count = 0;
int g_pipe[2] = {-1, -1};

void on_signal(int sig) {
  if (g_first == 0) {
    g_first = sig;
  }
  g_count = g_count + 1;
  const char byte = 1;
  [[maybe_unused]] ssize_t ignored = ::write(g_pipe[1], &byte, 1);
}

}  // namespace

void install() {
  if (g_pipe[0] >= 0) {
    return;
  }
  DTRAIN_CHECK(::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) == 0, "dtrun: pipe failed");
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    ::sigaction(sig, &action, nullptr);
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Slurm's warnings (sbatch --signal=USR1@90) reach every process of a step:
  // the workers act on them (train/slurm_requeue.h); dtrun must only outlive
  // them. A handler, not SIG_IGN, so the workers' exec restores the default.
  struct sigaction warning {};
  warning.sa_handler = [](int) {};
  sigemptyset(&warning.sa_mask);
  for (int sig : {SIGUSR1, SIGUSR2}) {
    ::sigaction(sig, &warning, nullptr);
  }
}

int first() {
  return g_first;
}

int count() {
  return g_count;
}

int wake_fd() {
  return g_pipe[0];
}

void drain() {
  char bytes[64];
  while (::read(g_pipe[0], bytes, sizeof(bytes)) > 0) {
  }
}

}  // namespace dtrain::launch::signals

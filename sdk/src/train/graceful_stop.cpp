#include "dtrain/train/graceful_stop.h"

#include <signal.h>

#include <atomic>

#include "dtrain/train/slurm_requeue.h"

namespace dtrain::train {

namespace {

// Written by the handler, which may run on any thread: lock-free atomics
// only (async-signal-safe).
std::atomic<int> g_first_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_stop_signal(int sig) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, sig);
  if (sig == SIGINT) {
    // The next Ctrl-C ends the process (sigaction is async-signal-safe).
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    ::sigaction(SIGINT, &fallback, nullptr);
  }
}

}  // namespace

void GracefulStop::install() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // A blocking read or write interrupted by the signal carries on.
  action.sa_flags = SA_RESTART;
  for (const int sig : {SIGTERM, SIGINT}) {
    ::sigaction(sig, &action, nullptr);
  }
  // In a Slurm job, the warning that asks for a checkpoint and a requeue.
  if (const int requeue = requeue_signal(); requeue != 0) {
    ::sigaction(requeue, &action, nullptr);
  }
}

int GracefulStop::signal() {
  return g_first_signal.load();
}

}  // namespace dtrain::train

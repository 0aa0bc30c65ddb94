// Note [Gloo's event loop spins on a held pair lock]
//
// Gloo's TCP transport receives on one event-loop thread per device. For
// every readable socket the loop calls Pair::handleEvents, which takes the
// pair's mutex with try_lock and, when another thread holds it (the thread
// running a collective posts sends and receives under that mutex), returns
// at once to epoll_wait -- which reports the same level-triggered event
// again. On an idle many-core machine the holder finishes in microseconds.
// On a loaded machine the holder is often preempted inside its critical
// section (typically by the very wake-up its own writev caused), and the
// loop thread then spins on the CPU the holder needs until the scheduler
// tick ends its slice: every message waits ~4 ms (250 Hz), and a 4 KB
// all-reduce took 4-10 ms instead of ~0.2 ms, burning ~4 ms of CPU per call.
// Measured with perf on 2 cores: >99% of the loop's try_lock calls failed.
//
// The fix, without patching Debian's libgloo: this library defines
// pthread_mutex_trylock. libdtrain_gloo.so is loaded with RTLD_DEEPBIND
// (Note [Two Glooes in one process] in gloo_api.h), so libgloo's calls bind
// here first, and only they do: the definition never becomes global, so
// LibTorch and the rest of the process keep glibc's. Here a try-lock waits,
// asleep on the mutex, for up to kTryLockWait before giving up: the holder
// gets the CPU back, releases the lock and wakes the loop. It still returns
// EBUSY when the wait runs out, so every caller's reason for try-locking
// (Gloo avoids a deadlock where a lock holder waits for a loop tick) keeps
// holding -- such a caller is delayed by kTryLockWait, never blocked.
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "loop_lock.h"

namespace {

constexpr long kTryLockWaitNs = 1'000'000;  // 1 ms: a few holder critical sections, << a tick

std::atomic<std::uint64_t> g_calls{0};

}  // namespace

extern "C" int pthread_mutex_trylock(pthread_mutex_t* mutex) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_nsec += kTryLockWaitNs;
  if (deadline.tv_nsec >= 1'000'000'000L) {
    deadline.tv_nsec -= 1'000'000'000L;
    ++deadline.tv_sec;
  }
  const int rc = pthread_mutex_clocklock(mutex, CLOCK_MONOTONIC, &deadline);
  return rc == ETIMEDOUT ? EBUSY : rc;
}

extern "C" std::uint64_t dtrain_gloo_trylock_calls() {
  return g_calls.load(std::memory_order_relaxed);
}

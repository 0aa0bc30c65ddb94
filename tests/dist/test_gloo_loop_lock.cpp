// Note [Gloo's event loop spins on a held pair lock] (sdk/src/dist/gloo/
// loop_lock.cpp), checked: libdtrain_gloo.so's pthread_mutex_trylock waits
// a little for a held mutex and then gives up, libgloo's try-locks really
// go through it during collectives, and it never replaces glibc's for the
// rest of the process.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <pthread.h>

#include <ATen/ATen.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "dtrain/dist/init.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using dtrain::testing::library_file_of;

namespace dist = dtrain::dist;
using namespace std::chrono_literals;
using TryLockFn = int (*)(pthread_mutex_t*);
using CallsFn = std::uint64_t (*)();

// The backend library, loaded the way the SDK loads it (or found already loaded).
void* open_backend() {
  return dlopen(DTRAIN_TEST_GLOO_LIBRARY, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}

TEST(GlooLoopLock, TryLockTakesAFreeMutexAndGivesUpOnAHeldOneAfterWaiting) {
  void* backend = open_backend();
  ASSERT_NE(backend, nullptr) << dlerror();
  auto try_lock = reinterpret_cast<TryLockFn>(dlsym(backend, "pthread_mutex_trylock"));
  ASSERT_NE(try_lock, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(try_lock), reinterpret_cast<void*>(&pthread_mutex_trylock))
      << "the backend has no try-lock of its own";

  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  ASSERT_EQ(try_lock(&mutex), 0);
  ASSERT_EQ(pthread_mutex_unlock(&mutex), 0);

  // Held by another thread for the whole call: EBUSY, but only after waiting
  // (glibc's returns at once), and not for long (no deadlock can form).
  std::atomic<bool> locked{false};
  std::atomic<bool> release{false};
  std::thread holder([&] {
    pthread_mutex_lock(&mutex);
    locked = true;
    while (!release) {
      std::this_thread::sleep_for(1ms);
    }
    pthread_mutex_unlock(&mutex);
  });
  while (!locked) {
    std::this_thread::yield();
  }
  const auto start = std::chrono::steady_clock::now();
  const int rc = try_lock(&mutex);
  const auto waited = std::chrono::steady_clock::now() - start;
  release = true;
  holder.join();
  EXPECT_EQ(rc, EBUSY);
  EXPECT_GE(waited, 900us);
  EXPECT_LT(waited, 2s);
  dlclose(backend);
}

TEST(GlooLoopLock, LibglooTryLocksGoThroughItAndTheProcessKeepsGlibcs) {
  const auto port = dtrain::testing::free_port();
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    at::set_num_threads(1);
    dist::init_process_group({.backend = "gloo",
                              .init_method = "tcp://127.0.0.1:" + std::to_string(port),
                              .rank = rank,
                              .world_size = 2,
                              .timeout = 30s});
    void* backend = open_backend();  // the SDK's copy: same file, same handle
    ASSERT_NE(backend, nullptr) << dlerror();
    auto calls = reinterpret_cast<CallsFn>(dlsym(backend, "dtrain_gloo_trylock_calls"));
    ASSERT_NE(calls, nullptr);
    const std::uint64_t before = calls();
    at::Tensor t = at::full({1024}, rank + 1.0);
    for (int i = 0; i < 20; ++i) {
      t.fill_(rank + 1.0);
      dist::all_reduce(t);
    }
    EXPECT_TRUE(at::equal(t, at::full({1024}, 3.0)));
    // Gloo's event loop try-locks a pair for every message it receives.
    EXPECT_GT(calls(), before) << "libgloo's try-locks do not reach the replacement";
    // Nobody else sees it: the global definition is still glibc's.
    const std::string global = library_file_of(dlsym(RTLD_DEFAULT, "pthread_mutex_trylock"));
    EXPECT_EQ(global.find("libdtrain_gloo"), std::string::npos) << global;
    dlclose(backend);
    dist::destroy_process_group();
  });
  for (std::size_t r = 0; r < codes.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << "rank " << r << " failed (its output is above)";
  }
}

}  // namespace

// dtrain::data::PrefetchLoader: batches in order for any worker count, the
// bound on how far workers run ahead, that they really run ahead while the
// caller holds a batch, a failure rethrown at its own batch and no later,
// a destructor that returns while workers are busy, and the checks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/data/prefetch_loader.h"
#include "expect_error.h"

namespace {

using dtrain::data::PrefetchLoader;
using dtrain::data::PrefetchOptions;
using dtrain::testing::expect_error;
using namespace std::chrono_literals;

// Every batch next() returns until it returns none.
template <typename Batch>
std::vector<Batch> drain(PrefetchLoader<Batch>& loader) {
  std::vector<Batch> batches;
  while (std::optional<Batch> batch = loader.next()) {
    batches.push_back(std::move(*batch));
  }
  return batches;
}

TEST(PrefetchLoader, ReturnsEveryBatchInOrderForAnyWorkerCount) {
  for (int workers : {0, 1, 2, 4}) {
    for (int depth : {1, 3}) {
      // Uneven make times, so that workers finish out of order.
      PrefetchLoader<int64_t> loader(
          20,
          [](int64_t b) {
            std::this_thread::sleep_for(std::chrono::microseconds((b * 7919) % 5 * 300));
            return b * 10;
          },
          PrefetchOptions().workers(workers).depth(depth));
      std::vector<int64_t> expected;
      for (int64_t b = 0; b < 20; ++b) {
        expected.push_back(b * 10);
      }
      EXPECT_EQ(drain(loader), expected) << "workers " << workers << " depth " << depth;
      EXPECT_FALSE(loader.next().has_value()) << "after the last batch";
    }
  }
}

TEST(PrefetchLoader, NoBatchesGivesNothingAndStartsNoMake) {
  std::atomic<int> calls = 0;
  PrefetchLoader<int> loader(
      0, [&](int64_t) { return ++calls; }, PrefetchOptions().workers(3));
  EXPECT_FALSE(loader.next().has_value());
  EXPECT_EQ(calls, 0);
}

TEST(PrefetchLoader, WithoutWorkersMakesEachBatchOnTheCallersThread) {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> makers;
  PrefetchLoader<int64_t> loader(
      3,
      [&](int64_t b) {
        makers.push_back(std::this_thread::get_id());
        return b;
      },
      PrefetchOptions().workers(0));
  ASSERT_EQ(drain(loader).size(), 3u);
  EXPECT_EQ(makers, std::vector<std::thread::id>(3, caller));
}

TEST(PrefetchLoader, WorkersRunAtMostDepthBatchesAhead) {
  for (int depth : {1, 2, 4}) {
    // Calls of next() begun: the batch the latest one returns (or will) is
    // asked - 1, so none made may be past asked - 1 + depth.
    std::atomic<int64_t> asked = 0;
    std::atomic<int64_t> most_ahead = -1;
    PrefetchLoader<int64_t> loader(
        30,
        [&](int64_t b) {
          const int64_t ahead = b - (asked.load() - 1);
          int64_t seen = most_ahead.load();
          while (ahead > seen && !most_ahead.compare_exchange_weak(seen, ahead)) {
          }
          return b;
        },
        PrefetchOptions().workers(3).depth(depth));
    for (++asked; loader.next(); ++asked) {
      std::this_thread::sleep_for(1ms);  // give the workers time to run ahead
    }
    EXPECT_LE(most_ahead.load(), depth) << "depth " << depth;
    EXPECT_GE(most_ahead.load(), 1);
  }
}

// Made while the caller holds batch 0 and has not asked again: without
// prefetching, batch 1 would be made only in the second next().
TEST(PrefetchLoader, MakesTheNextBatchWhileTheCallerHoldsOne) {
  std::mutex mutex;
  std::condition_variable made_one;
  bool batch_one_made = false;
  PrefetchLoader<int64_t> loader(
      3,
      [&](int64_t b) {
        if (b == 1) {
          std::lock_guard lock(mutex);
          batch_one_made = true;
          made_one.notify_all();
        }
        return b;
      },
      PrefetchOptions().workers(1).depth(1));
  ASSERT_EQ(loader.next(), 0);
  {
    std::unique_lock lock(mutex);
    EXPECT_TRUE(made_one.wait_for(lock, 30s, [&] { return batch_one_made; }))
        << "batch 1 was not made while the caller held batch 0";
  }
  EXPECT_EQ(loader.next(), 1);
  EXPECT_EQ(loader.next(), 2);
}

TEST(PrefetchLoader, AFailureIsRethrownAtItsBatchAfterTheEarlierOnes) {
  for (int workers : {0, 1, 3}) {
    std::atomic<int64_t> last_started = -1;
    PrefetchLoader<int64_t> loader(
        40,
        [&](int64_t b) {
          int64_t seen = last_started.load();
          while (b > seen && !last_started.compare_exchange_weak(seen, b)) {
          }
          if (b == 5) {
            throw std::invalid_argument("cloud 5 is empty");
          }
          std::this_thread::sleep_for(200us);
          return b;
        },
        PrefetchOptions().workers(workers).depth(3));
    for (int64_t b = 0; b < 5; ++b) {
      ASSERT_EQ(loader.next(), b) << "workers " << workers;
    }
    // The same exception, type and message, every time it is asked again.
    for (int attempt = 0; attempt < 2; ++attempt) {
      expect_error<std::invalid_argument>([&] { loader.next(); }, "cloud 5 is empty");
    }
    // Nothing past what the bound allowed while batch 5 was being made.
    EXPECT_LE(last_started.load(), 5 + 3) << "workers " << workers;
  }
}

TEST(PrefetchLoader, DestructionWhileWorkersAreBusyReturns) {
  std::atomic<int> started = 0;
  {
    PrefetchLoader<int64_t> loader(
        1000,
        [&](int64_t b) {
          ++started;
          std::this_thread::sleep_for(2ms);
          return b;
        },
        PrefetchOptions().workers(4).depth(4));
    ASSERT_EQ(loader.next(), 0);
  }  // the destructor joins the workers after their current batch
  const int after_destruction = started.load();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(started.load(), after_destruction) << "a worker outlived the loader";
  EXPECT_LE(after_destruction, 1 + 4);
}

// Batches that derive their random draws from the batch number are the
// same whoever makes them.
TEST(PrefetchLoader, TensorBatchesAreTheSameForAnyWorkerCount) {
  auto batches_with = [](int workers) {
    PrefetchLoader<at::Tensor> loader(
        12,
        [](int64_t b) {
          at::Generator generator = at::detail::createCPUGenerator(1000 + b);
          return at::rand({8, 3}, generator) * static_cast<double>(b);
        },
        PrefetchOptions().workers(workers).depth(2));
    return drain(loader);
  };
  const std::vector<at::Tensor> reference = batches_with(0);
  for (int workers : {1, 3}) {
    const std::vector<at::Tensor> batches = batches_with(workers);
    ASSERT_EQ(batches.size(), reference.size());
    for (size_t b = 0; b < batches.size(); ++b) {
      EXPECT_TRUE(at::equal(batches[b], reference[b])) << "batch " << b << " workers " << workers;
    }
  }
}

TEST(PrefetchLoader, BadArgumentsAreNamed) {
  auto identity = [](int64_t b) { return b; };
  expect_error([&] { PrefetchLoader<int64_t>(-1, identity); }, "num_batches must not be negative");
  expect_error([&] { PrefetchLoader<int64_t>(4, identity, PrefetchOptions().workers(-2)); },
               "workers must not be negative, got -2");
  expect_error([&] { PrefetchLoader<int64_t>(4, identity, PrefetchOptions().depth(0)); },
               "depth must be at least 1, got 0");
  expect_error([&] { PrefetchLoader<int64_t>(4, nullptr); }, "make is empty");
}

}  // namespace

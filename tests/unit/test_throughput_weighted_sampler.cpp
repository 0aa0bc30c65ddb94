// ThroughputWeightedSampler and apportion: shares partition the dataset,
// follow the weights, and slice DistributedSampler's epoch order.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/data/throughput_weighted_sampler.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

using dtrain::data::apportion;
using dtrain::data::epoch_order;
using dtrain::data::ThroughputWeightedSampler;
using dtrain::data::ThroughputWeightedSamplerOptions;
using dtrain::testing::expect_error;

const std::vector<std::vector<double>> kWeightSets = {
    {1.0},
    {1.0, 1.0},
    {3.0, 1.0},
    {1.0, 2.0, 3.0},
    {1250.5, 310.25, 310.25, 77.0},       // measured samples/s of mixed GPUs
    {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0},  // equal weights, size not divisible
    {1e-3, 1.0, 1e3},
};

TEST(Apportion, PartsSumToTotalAndStayWithinOneOfTheExactShare) {
  for (const auto& weights : kWeightSets) {
    const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
    for (int64_t total : {0, 1, 2, 5, 17, 100, 1001, 60000}) {
      const auto parts = apportion(total, weights);
      ASSERT_EQ(parts.size(), weights.size());
      EXPECT_EQ(std::accumulate(parts.begin(), parts.end(), int64_t{0}), total);
      for (std::size_t r = 0; r < parts.size(); ++r) {
        EXPECT_GE(parts[r], 0);
        EXPECT_LT(std::abs(parts[r] - total * weights[r] / sum), 1.0)
            << "rank " << r << " of " << weights.size() << ", total " << total;
      }
    }
  }
  // Weights at double's edge: their sum would overflow to inf.
  EXPECT_EQ(apportion(10, {1e308, 1e308}), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(apportion(10, {1.5e308, 1e308, 1e308, 1e308}).front(), 3);
  // Exact proportions come out exact.
  EXPECT_EQ(apportion(60, {1, 2, 3}), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(apportion(100, {3, 1}), (std::vector<int64_t>{75, 25}));
}

TEST(ThroughputWeightedSampler, RanksPartitionOneEpochOrder) {
  for (const auto& weights : kWeightSets) {
    for (int64_t size : {1, 9, 100, 1001}) {
      for (int64_t epoch : {0, 4}) {
        std::vector<int64_t> joined;
        std::vector<int64_t> shares;
        for (int64_t rank = 0; rank < static_cast<int64_t>(weights.size()); ++rank) {
          ThroughputWeightedSampler sampler(size, weights,
                                            ThroughputWeightedSamplerOptions().rank(rank).seed(9));
          sampler.set_epoch(epoch);
          const auto mine = sampler.indices();
          ASSERT_EQ(static_cast<int64_t>(mine.size()), sampler.num_samples());
          ASSERT_EQ(sampler.offset(), static_cast<int64_t>(joined.size()));
          joined.insert(joined.end(), mine.begin(), mine.end());
          shares.push_back(sampler.num_samples());
          // Every rank computes the same split.
          EXPECT_EQ(sampler.shares(), apportion(size, weights));
        }
        // Rank slices laid end to end are exactly the shuffled epoch order:
        // a partition of the dataset, nothing padded or dropped.
        EXPECT_EQ(joined, epoch_order(size, 9, epoch, true));
        EXPECT_EQ(shares, apportion(size, weights));
      }
    }
  }
}

TEST(ThroughputWeightedSampler, SharesFollowTheWeights) {
  // A GPU four times as fast reads four times as much of each epoch.
  ThroughputWeightedSampler fast(1000, {400.0, 100.0}, ThroughputWeightedSamplerOptions().rank(0));
  ThroughputWeightedSampler slow(1000, {400.0, 100.0}, ThroughputWeightedSamplerOptions().rank(1));
  EXPECT_EQ(fast.num_samples(), 800);
  EXPECT_EQ(slow.num_samples(), 200);
  // Batch sizes out of a global batch of 64 in the same proportion.
  EXPECT_EQ(fast.share_of(64) + slow.share_of(64), 64);
  EXPECT_EQ(fast.share_of(64), 51);
  // Equal weights split like contiguous blocks of near-equal size.
  ThroughputWeightedSampler even(10, {1, 1, 1}, ThroughputWeightedSamplerOptions().rank(2));
  EXPECT_EQ(even.shares(), (std::vector<int64_t>{3, 4, 3}));
}

TEST(ThroughputWeightedSampler, ShuffleOffSlicesTheIdentityAndEpochsReshuffle) {
  ThroughputWeightedSampler plain(10, {1, 4},
                                  ThroughputWeightedSamplerOptions().rank(1).shuffle(false));
  EXPECT_EQ(plain.indices(), (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8, 9}));
  ThroughputWeightedSampler shuffled(50, {1, 4}, ThroughputWeightedSamplerOptions().rank(1));
  const auto first = shuffled.indices();
  shuffled.set_epoch(1);
  EXPECT_NE(shuffled.indices(), first);
  shuffled.set_epoch(0);
  EXPECT_EQ(shuffled.indices(), first);
}

TEST(ThroughputWeightedSampler, BadArgumentsAreErrorsNamingTheValue) {
  const auto rank0 = ThroughputWeightedSamplerOptions().rank(0);
  expect_error([&] { ThroughputWeightedSampler(0, {1.0}, rank0); },
               "dataset_size must be positive, got 0");
  expect_error([&] { ThroughputWeightedSampler(10, {}, rank0); }, "weights must not be empty");
  expect_error(
      [&] {
        ThroughputWeightedSampler(10, {1.0, 0.0}, rank0);
      },
      "weight of rank 1 must be positive and finite, got 0");
  expect_error(
      [&] {
        ThroughputWeightedSampler(10, {-2.0, 1.0}, rank0);
      },
      "weight of rank 0 must be positive and finite, got -2");
  expect_error(
      [&] { ThroughputWeightedSampler(10, {std::numeric_limits<double>::quiet_NaN()}, rank0); },
      "weight of rank 0 must be positive and finite");
  expect_error(
      [] {
        ThroughputWeightedSampler(10, {1.0, 2.0}, ThroughputWeightedSamplerOptions().rank(2));
      },
      "invalid rank 2, rank should be in the interval [0, 1]");
  expect_error([] { ThroughputWeightedSampler(10, {1.0}); }, "no default process group");
  expect_error([] { apportion(-1, {1.0}); }, "total must be >= 0, got -1");
}

}  // namespace

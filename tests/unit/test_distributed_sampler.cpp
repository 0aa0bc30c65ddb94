// DistributedSampler's properties; its parity with PyTorch's index lists is
// tests/python/test_distributed_sampler.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

using dtrain::data::DistributedSampler;
using dtrain::data::DistributedSamplerOptions;
using dtrain::data::epoch_order;
using dtrain::testing::expect_error;

std::vector<std::vector<int64_t>> shards(int64_t size, DistributedSamplerOptions base,
                                         int64_t world, int64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t rank = 0; rank < world; ++rank) {
    DistributedSampler sampler(size, base.num_replicas(world).rank(rank));
    sampler.set_epoch(epoch);
    out.push_back(sampler.indices());
  }
  return out;
}

TEST(DistributedSampler, PaddedShardsCoverEveryIndexWithEqualLengths) {
  for (int64_t size : {1, 7, 10, 12, 31}) {
    for (int64_t world : {1, 2, 3, 4, 5, 16}) {
      const auto all = shards(size, DistributedSamplerOptions().seed(3), world);
      const int64_t per_rank = (size + world - 1) / world;
      std::map<int64_t, int> seen;
      for (const auto& shard : all) {
        ASSERT_EQ(static_cast<int64_t>(shard.size()), per_rank) << size << "/" << world;
        for (int64_t i : shard) {
          ASSERT_GE(i, 0);
          ASSERT_LT(i, size);
          ++seen[i];
        }
      }
      // Every index read at least once; repeats only for the padding.
      EXPECT_EQ(static_cast<int64_t>(seen.size()), size) << size << "/" << world;
      int64_t repeats = 0;
      for (const auto& [index, count] : seen) {
        repeats += count - 1;
      }
      EXPECT_EQ(repeats, per_rank * world - size) << size << "/" << world;
    }
  }
}

TEST(DistributedSampler, DropLastShardsAreDisjointAndCutTheTail) {
  for (int64_t size : {1, 7, 10, 12, 31}) {
    for (int64_t world : {1, 2, 3, 4, 5, 16}) {
      const auto all = shards(size, DistributedSamplerOptions().drop_last(true), world);
      std::set<int64_t> seen;
      for (const auto& shard : all) {
        ASSERT_EQ(static_cast<int64_t>(shard.size()), size / world);
        seen.insert(shard.begin(), shard.end());
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), size / world * world);
      // The kept indices are the epoch order's head.
      const auto order = epoch_order(size, 0, 0, true);
      EXPECT_EQ(seen, std::set<int64_t>(order.begin(), order.begin() + size / world * world));
    }
  }
}

TEST(DistributedSampler, WithoutShuffleRanksStrideThroughTheDataset) {
  const auto all = shards(10, DistributedSamplerOptions().shuffle(false), 4);
  // Padded to 12 with 0, 1: rank r reads r, r + 4, r + 8 (mod 10).
  EXPECT_EQ(all[0], (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(all[1], (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(all[2], (std::vector<int64_t>{2, 6, 0}));
  EXPECT_EQ(all[3], (std::vector<int64_t>{3, 7, 1}));
}

TEST(DistributedSampler, PaddingLongerThanTheDatasetRepeatsItWhole) {
  // 2 samples, 7 ranks: the order 0 1 is repeated to 0 1 0 1 0 1 0.
  const auto all = shards(2, DistributedSamplerOptions().shuffle(false), 7);
  const std::vector<int64_t> expected = {0, 1, 0, 1, 0, 1, 0};
  for (int64_t rank = 0; rank < 7; ++rank) {
    EXPECT_EQ(all[rank], std::vector<int64_t>{expected[rank]}) << "rank " << rank;
  }
  DistributedSampler dropped(2, DistributedSamplerOptions(7, 3).drop_last(true));
  EXPECT_EQ(dropped.num_samples(), 0);
  EXPECT_EQ(dropped.total_size(), 0);
  EXPECT_TRUE(dropped.indices().empty());
}

TEST(DistributedSampler, ShuffleIsAPermutationFixedBySeedPlusEpoch) {
  DistributedSampler a(100, DistributedSamplerOptions(1, 0).seed(5));
  DistributedSampler b(100, DistributedSamplerOptions(1, 0).seed(3));
  b.set_epoch(2);
  // Only seed + epoch matters, as in PyTorch.
  EXPECT_EQ(a.indices(), b.indices());
  auto sorted = a.indices();
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, epoch_order(100, 0, 0, false));
  EXPECT_NE(a.indices(), epoch_order(100, 0, 0, false));
  a.set_epoch(1);
  EXPECT_NE(a.indices(), b.indices());
  // The same epoch gives the same order again (no hidden state).
  b.set_epoch(3);
  EXPECT_EQ(a.indices(), b.indices());
}

TEST(DistributedSampler, SizesFollowPyTorchFormulas) {
  DistributedSampler padded(10, DistributedSamplerOptions(3, 0));
  EXPECT_EQ(padded.num_samples(), 4);
  EXPECT_EQ(padded.total_size(), 12);
  DistributedSampler cut(10, DistributedSamplerOptions(3, 2).drop_last(true));
  EXPECT_EQ(cut.num_samples(), 3);
  EXPECT_EQ(cut.total_size(), 9);
  DistributedSampler even(12, DistributedSamplerOptions(3, 1).drop_last(true));
  EXPECT_EQ(even.num_samples(), 4);
}

// The sizes are computed without overflow at int64's edge (the indices of
// such a dataset could not be listed, but its sizes can be asked for).
TEST(DistributedSampler, SizesAtInt64sEdge) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  DistributedSampler many_replicas(1, DistributedSamplerOptions(kMax, 0));
  EXPECT_EQ(many_replicas.num_samples(), 1);
  EXPECT_EQ(many_replicas.indices(), std::vector<int64_t>{0});
  DistributedSampler huge(kMax - 1, DistributedSamplerOptions(2, 1));
  EXPECT_EQ(huge.num_samples(), kMax / 2);
  EXPECT_EQ(huge.total_size(), kMax - 1);
  DistributedSampler cut(kMax, DistributedSamplerOptions(2, 0).drop_last(true));
  EXPECT_EQ(cut.num_samples(), kMax / 2);
  expect_error([] { DistributedSampler(kMax, DistributedSamplerOptions(2, 0)); },
               "padded to a multiple of 2 replicas does not fit in int64");
}

TEST(DistributedSampler, BadArgumentsAreErrorsNamingTheValue) {
  expect_error([] { DistributedSampler(10, DistributedSamplerOptions(4, 4)); },
               "invalid rank 4, rank should be in the interval [0, 3]");
  expect_error([] { DistributedSampler(10, DistributedSamplerOptions(4, -1)); }, "invalid rank -1");
  expect_error([] { DistributedSampler(10, DistributedSamplerOptions(0, 0)); },
               "num_replicas must be >= 1, got 0");
  expect_error([] { DistributedSampler(0, DistributedSamplerOptions(2, 0)); },
               "dataset_size must be positive, got 0");
  expect_error([] { DistributedSampler(-5, DistributedSamplerOptions(2, 0)); }, "got -5");
  // No rank given and no process group: say how to fix it.
  expect_error([] { DistributedSampler(10); }, "init_process_group");
  expect_error([] { DistributedSampler(10, DistributedSamplerOptions().rank(0)); },
               "no default process group");
}

}  // namespace

// The Trainer's Sharding after a restart with another split: the
// samples no process reached are listed exactly (every process's split,
// less the steps taken), and that rest is split among the new processes
// with every sample once (padded as DistributedSampler pads, or cut by the
// weights), a last single sample joining the batch before it; a rest too
// small for batch norm on every process ends the epoch. White-box: no
// process group is needed for these (Job::sum is not called).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "dtrain/train/sharding.h"

namespace {

using dtrain::train::EpochShard;
using dtrain::train::Job;
using dtrain::train::Sharding;
using dtrain::train::TrainerOptions;

TrainerOptions options(int64_t batch_size, const std::string& rank_weights = "equal") {
  return TrainerOptions()
      .batch_size(batch_size)
      .seed(7)
      .rank_weights(dtrain::train::parse_rank_weights(rank_weights));
}

std::vector<int64_t> sorted(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// Every rank's Sharding of one job, as each process would build it.
std::vector<Sharding> job_of(int world, int64_t dataset, const TrainerOptions& o) {
  std::vector<Sharding> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back(o, dataset, Job{.rank = r, .world = world});
  }
  return ranks;
}

TEST(ShardingRest, UntrainedIsEveryProcessesSplitLessItsSteps) {
  const auto old = job_of(2, 50, options(4));
  // 25 samples each, the last single one left out: 24 each, 6 steps of 4.
  const EpochShard rank0 = old[0].shard(1);
  const EpochShard rank1 = old[1].shard(1);
  ASSERT_EQ(rank0.indices.size(), 24u);
  ASSERT_EQ(rank1.indices.size(), 24u);
  std::vector<int64_t> expected(rank0.indices.begin() + 12, rank0.indices.end());
  expected.insert(expected.end(), rank1.indices.begin() + 12, rank1.indices.end());
  EXPECT_EQ(old[0].untrained(1, 3), expected) << "after 3 steps of 4 samples";
  EXPECT_EQ(old[1].untrained(1, 3), expected) << "every rank lists the same";
  // Another epoch is another order.
  EXPECT_NE(old[0].untrained(2, 3), expected);
}

TEST(ShardingRest, TheRestIsSplitWithEverySampleOnce) {
  const auto old = job_of(2, 50, options(4));
  const std::vector<int64_t> rest = old[0].untrained(1, 3);  // 24 samples
  for (const int world : {1, 3, 4}) {
    auto now = job_of(world, 50, options(4));
    std::vector<int64_t> trained;
    int64_t steps = -1;
    for (auto& rank : now) {
      ASSERT_TRUE(rank.continue_with(1, rest)) << world << " processes";
      EXPECT_TRUE(rank.splits_rest(1));
      EXPECT_FALSE(rank.splits_rest(2));
      const EpochShard shard = rank.shard(1);
      trained.insert(trained.end(), shard.indices.begin(), shard.indices.end());
      if (steps >= 0) {
        EXPECT_EQ(shard.steps, steps) << "the processes stay in step";
      }
      steps = shard.steps;
    }
    EXPECT_EQ(sorted(trained), sorted(rest)) << world << " processes: each sample once";
  }
}

TEST(ShardingRest, PaddingAndALastSingleSample) {
  const std::vector<int64_t> rest{5,  9,  13, 2,  40, 41, 7,  8,  30, 31, 32, 33, 34,
                                  35, 36, 37, 38, 39, 20, 21, 22, 23, 24, 25, 26};  // 25
  auto now = job_of(3, 50, options(4));
  std::vector<int64_t> trained;
  for (auto& rank : now) {
    ASSERT_TRUE(rank.continue_with(1, rest));
    const EpochShard shard = rank.shard(1);
    // Padded to 27: 9 each; 9 = 4 + 5, the single ninth sample in the last batch.
    EXPECT_EQ(shard.indices.size(), 9u);
    EXPECT_EQ(shard.steps, 2);
    trained.insert(trained.end(), shard.indices.begin(), shard.indices.end());
  }
  std::vector<int64_t> padded = rest;
  padded.insert(padded.end(), {5, 9});  // DistributedSampler repeats the start
  EXPECT_EQ(sorted(trained), sorted(padded));
}

TEST(ShardingRest, WeightsCutTheRestIntoSlices) {
  const std::vector<int64_t> rest{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  auto now = job_of(2, 50, options(4, "3,1"));
  const std::vector<std::vector<int64_t>> expected{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                                                   {13, 14, 15, 16}};
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(now[static_cast<size_t>(r)].continue_with(1, rest));
    const EpochShard shard = now[static_cast<size_t>(r)].shard(1);
    EXPECT_EQ(shard.indices, expected[static_cast<size_t>(r)]) << "rank " << r;
    EXPECT_EQ(shard.rank_samples, (std::vector<int64_t>{12, 4}));
    EXPECT_EQ(shard.rank_batches, (std::vector<int64_t>{6, 2}));
  }
}

TEST(ShardingRest, TooFewLeftForBatchNormEndsTheEpoch) {
  auto now = job_of(2, 50, options(4));
  // One sample, padded to two: one a process.
  EXPECT_FALSE(now[0].continue_with(1, {17}));
  const EpochShard shard = now[0].shard(1);
  EXPECT_TRUE(shard.indices.empty());
  EXPECT_EQ(shard.steps, 0);
  // Two samples, one a process, is also too few; four are enough.
  EXPECT_FALSE(now[1].continue_with(1, {17, 18}));
  EXPECT_TRUE(now[1].continue_with(1, {17, 18, 19, 20}));
  EXPECT_EQ(now[1].shard(1).indices, (std::vector<int64_t>{18, 20}));
}

}  // namespace

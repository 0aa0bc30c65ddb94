// The samplers inside a process group: world and rank from the default
// group, and throughput weights agreed through all_gather.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/data/throughput_weighted_sampler.h"
#include "dtrain/dist/init.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
namespace data = dtrain::data;

using dtrain::testing::run_gloo_ranks;

// Every rank's indices, gathered (all shards have the same length here).
std::vector<int64_t> gather_all(const std::vector<int64_t>& mine, int world) {
  const at::Tensor local = at::tensor(mine, at::kLong);
  std::vector<at::Tensor> all;
  for (int r = 0; r < world; ++r) {
    all.push_back(at::empty_like(local));
  }
  dist::all_gather(all, local);
  const at::Tensor joined = at::cat(all);
  return {joined.data_ptr<int64_t>(), joined.data_ptr<int64_t>() + joined.numel()};
}

TEST(SamplersInAGroup, DistributedSamplerTakesWorldAndRankFromTheDefaultGroup) {
  constexpr int kWorld = 3;
  run_gloo_ranks(kWorld, 30s, [&](int rank, int) {
    data::DistributedSampler sampler(20, data::DistributedSamplerOptions().seed(4));
    EXPECT_EQ(sampler.num_replicas(), kWorld);
    EXPECT_EQ(sampler.rank(), rank);
    sampler.set_epoch(2);
    data::DistributedSampler explicit_sampler(
        20, data::DistributedSamplerOptions(kWorld, rank).seed(4));
    explicit_sampler.set_epoch(2);
    EXPECT_EQ(sampler.indices(), explicit_sampler.indices());
    // The shards of all ranks cover the dataset (21 slots: one repeat).
    const auto all = gather_all(sampler.indices(), kWorld);
    EXPECT_EQ(all.size(), 21u);
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 20u);
  });
}

// Runs check_agreement and returns its error message ("" for none).
std::string agreement_error(const data::DistributedSampler& sampler) {
  try {
    sampler.check_agreement();
  } catch (const dtrain::Error& error) {
    return error.what();
  }
  return "";
}

TEST(SamplersInAGroup, CheckAgreementNamesTheRankThatDiffers) {
  constexpr int kWorld = 3;
  run_gloo_ranks(kWorld, 30s, [&](int rank, int) {
    data::DistributedSampler good(50, data::DistributedSamplerOptions().seed(1));
    good.set_epoch(4);
    EXPECT_EQ(agreement_error(good), "");
    // Rank 2 read a dataset of another size: every rank hears of it.
    data::DistributedSampler sizes(rank == 2 ? 49 : 50);
    EXPECT_EQ(agreement_error(sizes),
              "DistributedSampler: ranks disagree on dataset_size: rank 0 has 50, rank 2 has 49");
    // Rank 1 forgot set_epoch.
    data::DistributedSampler epochs(50);
    if (rank != 1) {
      epochs.set_epoch(3);
    }
    EXPECT_EQ(agreement_error(epochs),
              "DistributedSampler: ranks disagree on epoch: rank 0 has 3, rank 1 has 0");
    // Two processes computed the same shard.
    data::DistributedSampler ranks(50,
                                   data::DistributedSamplerOptions(kWorld, rank == 2 ? 0 : rank));
    EXPECT_EQ(agreement_error(ranks),
              "DistributedSampler: processes of group ranks 0 and 2 both use sampler rank 0");
    data::DistributedSampler world(50, data::DistributedSamplerOptions(2, rank % 2));
    EXPECT_EQ(agreement_error(world),
              "DistributedSampler: num_replicas is 2 but group 'default' has 3 ranks");
  });
}

TEST(SamplersInAGroup, FromThroughputAgreesOnTheWeightsAndPartitions) {
  constexpr int kWorld = 3;
  const std::vector<double> throughput = {120.0, 360.0, 40.0};
  run_gloo_ranks(kWorld, 30s, [&](int rank, int) {
    auto sampler = data::ThroughputWeightedSampler::from_throughput(
        1000, throughput[static_cast<std::size_t>(rank)],
        data::ThroughputWeightedSamplerOptions().seed(11));
    EXPECT_EQ(sampler.rank(), rank);
    EXPECT_EQ(sampler.weights(), throughput);
    EXPECT_EQ(sampler.shares(), (std::vector<int64_t>{231, 692, 77}));
    sampler.set_epoch(3);
    // Same split on every rank: the slices laid end to end are the epoch order.
    const auto order = data::epoch_order(1000, 11, 3, true);
    const auto mine = sampler.indices();
    EXPECT_TRUE(std::equal(mine.begin(), mine.end(), order.begin() + sampler.offset()));
    at::Tensor count = at::tensor({sampler.num_samples()}, at::kLong);
    dist::all_reduce(count);
    EXPECT_EQ(count.item<int64_t>(), 1000);
  });
}

TEST(SamplersInAGroup, ABadThroughputOnOneRankIsAnErrorOnEveryRank) {
  constexpr int kWorld = 2;
  run_gloo_ranks(kWorld, 30s, [&](int rank, int) {
    const double mine = rank == 1 ? std::numeric_limits<double>::quiet_NaN() : 10.0;
    try {
      data::ThroughputWeightedSampler::from_throughput(100, mine);
      ADD_FAILURE() << "no error on rank " << rank;
    } catch (const dtrain::Error& error) {
      EXPECT_NE(std::string(error.what()).find("weight of rank 1 must be positive and finite"),
                std::string::npos)
          << error.what();
    }
  });
}

}  // namespace

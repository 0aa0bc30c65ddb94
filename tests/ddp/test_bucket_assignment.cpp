// Bucket assignment and the timeline's arithmetic, in one process.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dtrain/ddp/bucket_assignment.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/ddp/timeline.h"
#include "dtrain/util/errors.h"

namespace {

using dtrain::ddp::assign_buckets;
using Buckets = std::vector<std::vector<std::size_t>>;

std::vector<at::Tensor> floats(const std::vector<std::int64_t>& numels) {
  std::vector<at::Tensor> tensors;
  for (auto n : numels) {
    tensors.push_back(at::zeros({n}));
  }
  return tensors;
}

TEST(BucketAssignment, ReverseOrderWithSmallFirstBucket) {
  // 4 bytes per float: caps of 40 bytes first, 100 bytes after.
  const auto tensors = floats({30, 5, 5, 20, 4});
  const std::vector<std::size_t> reverse = {4, 3, 2, 1, 0};
  EXPECT_EQ(assign_buckets(tensors, reverse, 40, 100), (Buckets{{4, 3}, {2, 1, 0}}));
}

TEST(BucketAssignment, OversizedTensorGetsItsOwnBucket) {
  const auto tensors = floats({1000, 2, 2});
  EXPECT_EQ(assign_buckets(tensors, {0, 1, 2}, 16, 16), (Buckets{{0}, {1, 2}}));
}

TEST(BucketAssignment, DtypesNeverShareABucket) {
  std::vector<at::Tensor> tensors = {at::zeros({2}), at::zeros({2}, at::kDouble), at::zeros({2}),
                                     at::zeros({2}, at::kDouble)};
  EXPECT_EQ(assign_buckets(tensors, {0, 1, 2, 3}, 1 << 20, 1 << 20), (Buckets{{0, 2}, {1, 3}}));
}

TEST(BucketAssignment, FollowsTheGivenOrder) {
  const auto tensors = floats({10, 10, 10, 10});
  EXPECT_EQ(assign_buckets(tensors, {2, 0, 3, 1}, 80, 80), (Buckets{{2, 0}, {3, 1}}));
}

TEST(BucketAssignment, RejectsBadOrders) {
  const auto tensors = floats({1, 1});
  EXPECT_THROW(assign_buckets(tensors, {0, 0}, 8, 8), dtrain::Error);
  EXPECT_THROW(assign_buckets(tensors, {0, 5}, 8, 8), dtrain::Error);
  EXPECT_THROW(assign_buckets(tensors, {0, 1}, 0, 8), dtrain::Error);
}

TEST(Timeline, HiddenFractionIsOverlapOverCommunication) {
  using namespace std::chrono_literals;
  const dtrain::ddp::TimePoint t0{};
  dtrain::ddp::Timeline timeline;
  dtrain::ddp::StepEvents step;
  step.backward_start = t0;
  step.backward_end = t0 + 100ms;
  step.buckets.push_back({0, 4, t0 + 20ms, t0 + 60ms});    // fully hidden: 40 ms
  step.buckets.push_back({1, 4, t0 + 80ms, t0 + 140ms});   // 20 of 60 ms hidden
  step.buckets.push_back({2, 4, t0 + 100ms, t0 + 120ms});  // after backward: 0 of 20
  timeline.add_step(step);
  EXPECT_NEAR(timeline.hidden_fraction(), 60.0 / 120.0, 1e-9);
  EXPECT_NEAR(timeline.communication_seconds(), 0.120, 1e-9);
  EXPECT_NE(timeline.summary().find("50.0%"), std::string::npos) << timeline.summary();
  EXPECT_EQ(dtrain::ddp::Timeline().hidden_fraction(), 0.0);
  EXPECT_EQ(dtrain::ddp::Timeline().communication_seconds(), 0.0);
}

TEST(Timeline, UnwritablePathIsAnIOError) {
  dtrain::ddp::Timeline timeline;
  EXPECT_THROW(timeline.write_chrome_trace("/nonexistent-dir/trace.json"), dtrain::IOError);
}

TEST(DdpDetail, BatchSizeIsTheFirstTensorsLeadingDim) {
  using dtrain::ddp::detail::leading_batch_size;
  EXPECT_EQ(leading_batch_size(3, at::zeros({7, 2}), at::zeros({5})), 7);
  EXPECT_EQ(leading_batch_size(at::zeros({})), std::nullopt);
  EXPECT_EQ(leading_batch_size(), std::nullopt);
}

TEST(DdpDetail, OutputTensorsOfTensorsVectorsAndTuples) {
  using dtrain::ddp::detail::output_tensors;
  EXPECT_EQ(output_tensors(at::zeros({1})).size(), 1u);
  EXPECT_EQ(output_tensors(std::vector<at::Tensor>{at::zeros({1}), at::zeros({2})}).size(), 2u);
  EXPECT_EQ(output_tensors(std::make_tuple(at::zeros({1}), 3, at::zeros({2}))).size(), 2u);
}

}  // namespace

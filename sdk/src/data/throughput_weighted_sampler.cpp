#include "dtrain/data/throughput_weighted_sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::data {

std::vector<int64_t> apportion(int64_t total, const std::vector<double>& weights) {
  DTRAIN_CHECK(total >= 0, "apportion: total must be >= 0, got ", total);
  DTRAIN_CHECK(!weights.empty(), "apportion: weights must not be empty");
  for (std::size_t r = 0; r < weights.size(); ++r) {
    DTRAIN_CHECK(std::isfinite(weights[r]) && weights[r] > 0, "apportion: weight of rank ", r,
                 " must be positive and finite, got ", weights[r]);
  }
  // Relative to the largest weight, so that the sums below stay finite
  // whatever the weights' magnitude (two weights of 1e308 would sum to inf).
  const double largest = *std::max_element(weights.begin(), weights.end());
  double sum = 0;
  for (const double weight : weights) {
    sum += weight / largest;
  }
  // Rounding cumulative quotas (not each quota alone) keeps the parts
  // summing to `total` without a fix-up pass; the prefix sums are taken in
  // rank order, so every process computes bit-identical boundaries.
  std::vector<int64_t> parts(weights.size());
  double prefix = 0;
  int64_t previous = 0;
  for (std::size_t r = 0; r < weights.size(); ++r) {
    prefix += weights[r] / largest;
    int64_t boundary =
        r + 1 == weights.size()
            ? total
            : static_cast<int64_t>(std::llround(static_cast<double>(total) * (prefix / sum)));
    boundary = std::clamp(boundary, previous, total);
    parts[r] = boundary - previous;
    previous = boundary;
  }
  return parts;
}

ThroughputWeightedSampler::ThroughputWeightedSampler(int64_t dataset_size,
                                                     std::vector<double> weights,
                                                     ThroughputWeightedSamplerOptions options)
    : dataset_size_(dataset_size), weights_(std::move(weights)), options_(std::move(options)) {
  DTRAIN_CHECK(dataset_size_ > 0, "ThroughputWeightedSampler: dataset_size must be positive, got ",
               dataset_size_);
  DTRAIN_CHECK(!weights_.empty(), "ThroughputWeightedSampler: weights must not be empty");
  DTRAIN_CHECK(options_.rank() || dist::is_initialized(),
               "ThroughputWeightedSampler: rank was not given and there is no default process "
               "group; pass ThroughputWeightedSamplerOptions().rank(r) or call "
               "dtrain::dist::init_process_group() first");
  rank_ = options_.rank() ? *options_.rank() : dist::get_rank();
  DTRAIN_CHECK(rank_ >= 0 && rank_ < static_cast<int64_t>(weights_.size()),
               "ThroughputWeightedSampler: invalid rank ", rank_,
               ", rank should be in the interval [0, ", weights_.size() - 1,
               "] (one weight per rank)");
  shares_ = apportion(dataset_size_, weights_);
  offset_ = std::accumulate(shares_.begin(), shares_.begin() + rank_, int64_t{0});
}

ThroughputWeightedSampler ThroughputWeightedSampler::from_throughput(
    int64_t dataset_size, double local_samples_per_second, ThroughputWeightedSamplerOptions options,
    const dist::ProcessGroupPtr& group) {
  const dist::ProcessGroupPtr pg = group ? group : dist::default_group();
  // A bad value is not checked here but after the gather, in apportion:
  // then every rank raises the same error instead of one rank raising and
  // the others waiting in all_gather until the timeout.
  const at::Tensor mine = at::full({1}, local_samples_per_second, at::kDouble);
  std::vector<at::Tensor> all;
  for (int r = 0; r < pg->size(); ++r) {
    all.push_back(at::empty({1}, at::kDouble));
  }
  dist::issue_and_wait([&] { return pg->all_gather(all, mine); });
  std::vector<double> weights;
  for (const at::Tensor& t : all) {
    weights.push_back(t.item<double>());
  }
  options.rank(pg->rank());
  return ThroughputWeightedSampler(dataset_size, std::move(weights), std::move(options));
}

std::vector<int64_t> ThroughputWeightedSampler::indices() const {
  const std::vector<int64_t> order =
      epoch_order(dataset_size_, options_.seed(), epoch_, options_.shuffle());
  const auto begin = order.begin() + offset_;
  return {begin, begin + num_samples()};
}

int64_t ThroughputWeightedSampler::share_of(int64_t total) const {
  return apportion(total, weights_)[static_cast<std::size_t>(rank_)];
}

}  // namespace dtrain::data

#include "dtrain/data/distributed_sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <limits>
#include <numeric>
#include <string>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::data {

std::vector<int64_t> epoch_order(int64_t dataset_size, int64_t seed, int64_t epoch, bool shuffle) {
  DTRAIN_CHECK(dataset_size >= 0, "dataset_size must be >= 0, got ", dataset_size);
  std::vector<int64_t> order(static_cast<std::size_t>(dataset_size));
  if (!shuffle) {
    std::iota(order.begin(), order.end(), int64_t{0});
    return order;
  }
  // Python's `seed + epoch` is an unbounded int that manual_seed reduces
  // modulo 2^64; unsigned addition gives that residue without overflow UB.
  const auto generator_seed = static_cast<uint64_t>(seed) + static_cast<uint64_t>(epoch);
  at::Generator generator = at::detail::createCPUGenerator(generator_seed);
  const at::Tensor perm =
      at::randperm(dataset_size, generator, at::TensorOptions().dtype(at::kLong));
  const int64_t* data = perm.const_data_ptr<int64_t>();
  std::copy(data, data + dataset_size, order.begin());
  return order;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(std::move(options)) {
  DTRAIN_CHECK(dataset_size_ > 0, "DistributedSampler: dataset_size must be positive, got ",
               dataset_size_);
  DTRAIN_CHECK((options_.num_replicas() && options_.rank()) || dist::is_initialized(),
               "DistributedSampler: num_replicas and rank were not given and there is no default "
               "process group; pass DistributedSamplerOptions(num_replicas, rank) or call "
               "dtrain::dist::init_process_group() first");
  num_replicas_ = options_.num_replicas() ? *options_.num_replicas() : dist::get_world_size();
  rank_ = options_.rank() ? *options_.rank() : dist::get_rank();
  DTRAIN_CHECK(num_replicas_ >= 1, "DistributedSampler: num_replicas must be >= 1, got ",
               num_replicas_);
  DTRAIN_CHECK(rank_ >= 0 && rank_ < num_replicas_, "DistributedSampler: invalid rank ", rank_,
               ", rank should be in the interval [0, ", num_replicas_ - 1, "]");
  // PyTorch computes ceil((size - replicas) / replicas) for drop_last with a
  // remainder: that is floor(size / replicas), also 0 when size < replicas.
  // (The ceiling is taken without adding, which could overflow.)
  num_samples_ = dataset_size_ / num_replicas_ +
                 (!options_.drop_last() && dataset_size_ % num_replicas_ != 0 ? 1 : 0);
  DTRAIN_CHECK(num_samples_ <= std::numeric_limits<int64_t>::max() / num_replicas_,
               "DistributedSampler: dataset_size ", dataset_size_, " padded to a multiple of ",
               num_replicas_, " replicas does not fit in int64");
}

std::vector<int64_t> DistributedSampler::indices() const {
  const std::vector<int64_t> order =
      epoch_order(dataset_size_, options_.seed(), epoch_, options_.shuffle());
  // Position p of the padded (or cut) epoch holds order[p % size]: padding
  // repeats the order from its start, whole copies first when it is longer
  // than the dataset, and drop_last only ever shortens it.
  std::vector<int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (int64_t p = rank_; p < total_size(); p += num_replicas_) {
    mine.push_back(order[static_cast<std::size_t>(p % dataset_size_)]);
  }
  DTRAIN_INTERNAL_ASSERT(static_cast<int64_t>(mine.size()) == num_samples_, "rank ", rank_, " got ",
                         mine.size(), " indices instead of ", num_samples_);
  return mine;
}

void DistributedSampler::check_agreement(const dist::ProcessGroupPtr& group) const {
  const dist::ProcessGroupPtr pg = group ? group : dist::default_group();
  // One row per rank, gathered everywhere, so every rank raises the same error.
  const std::vector<std::pair<const char*, int64_t>> fields = {
      {"dataset_size", dataset_size_},
      {"seed", options_.seed()},
      {"epoch", epoch_},
      {"shuffle", options_.shuffle() ? 1 : 0},
      {"drop_last", options_.drop_last() ? 1 : 0},
      {"num_replicas", num_replicas_},
      {"rank", rank_}};
  std::vector<int64_t> values;
  for (const auto& field : fields) {
    values.push_back(field.second);
  }
  const at::Tensor mine = at::tensor(values, at::kLong);
  std::vector<at::Tensor> rows;
  for (int r = 0; r < pg->size(); ++r) {
    rows.push_back(at::empty_like(mine));
  }
  dist::issue_and_wait([&] { return pg->all_gather(rows, mine); });
  const auto value = [&](int r, std::size_t field) { return rows[r][field].item<int64_t>(); };
  for (std::size_t f = 0; f + 1 < fields.size(); ++f) {
    for (int r = 1; r < pg->size(); ++r) {
      DTRAIN_CHECK(value(r, f) == value(0, f), "DistributedSampler: ranks disagree on ",
                   fields[f].first, ": rank 0 has ", value(0, f), ", rank ", r, " has ",
                   value(r, f));
    }
  }
  const std::size_t replicas = fields.size() - 2;
  DTRAIN_CHECK(value(0, replicas) == pg->size(), "DistributedSampler: num_replicas is ",
               value(0, replicas), " but group '", pg->name(), "' has ", pg->size(), " ranks");
  std::vector<int> owner(static_cast<std::size_t>(pg->size()), -1);
  for (int r = 0; r < pg->size(); ++r) {
    const auto claimed = static_cast<std::size_t>(value(r, fields.size() - 1));
    DTRAIN_CHECK(owner[claimed] == -1, "DistributedSampler: processes of group ranks ",
                 owner[claimed], " and ", r, " both use sampler rank ", claimed);
    owner[claimed] = r;
  }
}

}  // namespace dtrain::data

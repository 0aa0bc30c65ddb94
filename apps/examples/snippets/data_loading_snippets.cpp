// The C++ of docs/data-loading.md, compiled with the project so the
// guide's code cannot drift from the API (lint.doc_samples checks the guide
// shows these lines). Not run: the tests run the same calls.
#include <ATen/ATen.h>

#include <functional>
#include <optional>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/data/prefetch_loader.h"
#include "dtrain/data/throughput_weighted_sampler.h"

namespace snippets {

void shard_epochs(int64_t dataset_size, int64_t world_size, int64_t rank, int64_t epochs,
                  const std::function<void(int64_t)>& read_sample) {
  dtrain::data::DistributedSampler sampler(
      dataset_size, dtrain::data::DistributedSamplerOptions(world_size, rank).seed(42));
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    sampler.set_epoch(epoch);  // on every rank, or every epoch repeats epoch 0's order
    for (int64_t index : sampler.indices()) {
      read_sample(index);
    }
  }
}

int64_t weighted_share(int64_t dataset_size, double measured_samples_per_second,
                       int64_t global_batch, int64_t epoch) {
  // Collective: every rank passes its own measurement; all_gather makes the
  // weights, and so the split, identical on every rank.
  auto sampler = dtrain::data::ThroughputWeightedSampler::from_throughput(
      dataset_size, measured_samples_per_second,
      dtrain::data::ThroughputWeightedSamplerOptions().seed(42));
  const int64_t local_batch = sampler.share_of(global_batch);
  sampler.set_epoch(epoch);
  return local_batch;
}

using Batch = std::vector<at::Tensor>;

void prefetch(const at::Tensor& inputs, const at::Tensor& labels, const at::Tensor& order,
              int64_t batch_size, c10::Device device) {
  const int64_t num_batches = order.size(0) / batch_size;
  dtrain::data::PrefetchLoader<Batch> loader(
      num_batches,
      [&](int64_t b) {  // on a worker: select, pin
        at::Tensor index = order.narrow(0, b * batch_size, batch_size);
        return Batch{inputs.index_select(0, index).pin_memory(),
                     labels.index_select(0, index).pin_memory()};
      },
      dtrain::data::PrefetchOptions().workers(2).depth(4).device(device));
  while (std::optional<Batch> batch = loader.next()) {
    at::Tensor x = (*batch)[0].to(device, /*non_blocking=*/true);
  }
}

}  // namespace snippets

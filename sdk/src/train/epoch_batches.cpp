#include "epoch_batches.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "dtrain/train/step_seeds.h"

namespace dtrain::train::detail {

std::unique_ptr<data::PrefetchLoader<Batch>> epoch_batches(const Dataset& data,
                                                           const EpochShard& shard,
                                                           int64_t first_step,
                                                           const EpochSettings& settings, int epoch,
                                                           int rank) {
  const at::Tensor order = at::tensor(shard.indices, at::kLong);
  const int64_t n = order.numel();
  const int64_t batch_size = shard.batch_size;
  const int64_t num_batches = shard.steps;
  // Pinned host memory lets the copy to the GPU run without blocking.
  const bool pin = settings.device.is_cuda();
  auto make = [&data, order, n, batch_size, num_batches, first_step, pin, seed = settings.seed,
               epoch, rank](int64_t i) {
    const int64_t b = first_step + i;
    const int64_t begin = b * batch_size;
    const at::Tensor index = order.narrow(0, begin, b + 1 == num_batches ? n - begin : batch_size);
    at::Generator generator = batch_generator(seed, epoch, rank, b);
    Batch batch = data.batch(index, generator);
    if (pin) {
      for (at::Tensor& tensor : batch) {
        tensor = tensor.pin_memory();
      }
    }
    return batch;
  };
  return std::make_unique<data::PrefetchLoader<Batch>>(
      num_batches - first_step, std::move(make),
      data::PrefetchOptions()
          .workers(settings.loader_workers)
          .depth(2 * std::max(settings.loader_workers, 1))
          .device(settings.device));
}

}  // namespace dtrain::train::detail

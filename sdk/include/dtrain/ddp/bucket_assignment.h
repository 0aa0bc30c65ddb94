// Which parameters share a bucket: consecutive parameters (in the given
// order) of one dtype and device, up to a byte cap -- a smaller cap for the
// first bucket of each dtype, so the first all-reduce starts early.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::ddp {

// `order` lists indices into `tensors` (e.g. reverse registration order,
// or the order gradients became ready). Returns buckets of indices; a
// bucket closes once its bytes reach the cap, so one tensor larger than the
// cap gets a bucket of its own. Buckets are sorted by the position of their
// first tensor in `order`, which every rank computes identically.
std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<at::Tensor>& tensors,
                                                     const std::vector<std::size_t>& order,
                                                     std::size_t first_bucket_bytes,
                                                     std::size_t bucket_bytes);

}  // namespace dtrain::ddp

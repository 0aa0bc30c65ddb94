// Communication hooks: how the reducer turns one bucket's local gradients
// into their sum over the group. The reducer has already scaled the bucket
// (by 1/world or by this rank's sample share) before the hook starts, so a
// hook only sums; compression hooks therefore never see values larger than
// the final averaged gradient.
//
//   options.comm_hook = dtrain::ddp::compression_hook(at::kHalf);
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "dtrain/dist/process_group.h"

namespace dtrain::ddp {

// A reduction in flight: `work` completes the communication, then
// `complete` (if set) moves the result back into the bucket.
struct PendingReduction {
  dist::WorkPtr work;
  std::function<void()> complete;
};

class CommHook {
 public:
  virtual ~CommHook() = default;
  // Starts summing `bucket` (a flat buffer, contiguous) over `group`.
  virtual PendingReduction start(dist::ProcessGroup& group, at::Tensor& bucket) = 0;
  virtual std::string name() const = 0;
};

// Sums the bucket in its own dtype (PyTorch's default all-reduce hook).
std::shared_ptr<CommHook> allreduce_hook();

// Casts the bucket to `wire_dtype` (at::kHalf or at::kBFloat16), sums it in
// that dtype and casts back: half the bytes on the wire for fp32 gradients,
// at the cost of wire_dtype's precision (PyTorch's fp16_compress_hook and
// bf16_compress_hook).
std::shared_ptr<CommHook> compression_hook(at::ScalarType wire_dtype);

}  // namespace dtrain::ddp

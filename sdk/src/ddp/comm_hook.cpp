#include "dtrain/ddp/comm_hook.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::ddp {
namespace {

class AllreduceHook : public CommHook {
 public:
  PendingReduction start(dist::ProcessGroup& group, at::Tensor& bucket) override {
    return PendingReduction{group.all_reduce(bucket), nullptr};
  }
  std::string name() const override { return "allreduce"; }
};

class CompressionHook : public CommHook {
 public:
  explicit CompressionHook(at::ScalarType wire_dtype) : wire_dtype_(wire_dtype) {}

  PendingReduction start(dist::ProcessGroup& group, at::Tensor& bucket) override {
    if (bucket.scalar_type() == wire_dtype_) {
      return PendingReduction{group.all_reduce(bucket), nullptr};
    }
    auto compressed = std::make_shared<at::Tensor>(bucket.to(wire_dtype_));
    dist::WorkPtr work = group.all_reduce(*compressed);
    // `bucket` outlives the reduction (the reducer owns it).
    at::Tensor target = bucket;
    return PendingReduction{std::move(work),
                            [compressed, target]() mutable { target.copy_(*compressed); }};
  }
  std::string name() const override {
    return fmt::format("{}_compress", wire_dtype_ == at::kHalf ? "fp16" : "bf16");
  }

 private:
  at::ScalarType wire_dtype_;
};

}  // namespace

std::shared_ptr<CommHook> allreduce_hook() {
  return std::make_shared<AllreduceHook>();
}

std::shared_ptr<CommHook> compression_hook(at::ScalarType wire_dtype) {
  DTRAIN_CHECK(wire_dtype == at::kHalf || wire_dtype == at::kBFloat16,
               fmt::format("compression_hook: wire dtype must be Half or BFloat16, got {}",
                           c10::toString(wire_dtype)));
  return std::make_shared<CompressionHook>(wire_dtype);
}

}  // namespace dtrain::ddp

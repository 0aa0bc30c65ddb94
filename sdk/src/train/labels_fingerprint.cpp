#include "dtrain/train/labels_fingerprint.h"

#include <cstdint>

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace dtrain::train {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

// FNV-1a taking a whole 64-bit value per step (ShapeNet-Part's 29 million
// part labels hash in tens of milliseconds). Each step is a bijection of the
// state, so a change of any one value always changes the result; the value,
// not its bytes, is hashed, so the byte order of the machine does not show.
void mix(uint64_t& hash, int64_t value) {
  hash ^= static_cast<uint64_t>(value);
  hash *= kFnvPrime;
}

}  // namespace

std::string labels_fingerprint(const std::vector<at::Tensor>& labels) {
  uint64_t hash = kFnvOffset;
  for (const at::Tensor& tensor : labels) {
    const at::Tensor values =
        tensor.defined() ? tensor.to(at::kCPU, at::kLong).contiguous() : at::empty({0}, at::kLong);
    mix(hash, values.dim());
    for (const int64_t size : values.sizes()) {
      mix(hash, size);
    }
    const int64_t* data = values.const_data_ptr<int64_t>();
    for (int64_t i = 0; i < values.numel(); ++i) {
      mix(hash, data[i]);
    }
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace dtrain::train

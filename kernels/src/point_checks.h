// Internal: input checks shared by the PointNet++ ops. Each names the op, the
// argument, what it got and what was expected, and throws c10::Error.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace dtrain::kernels::detail {

inline bool is_supported_float(at::ScalarType type) {
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

// The kernels read raw strided memory: a sparse (or other non-strided)
// tensor would otherwise fail deep inside contiguous() with LibTorch's
// "unsupported memory format option", which names neither op nor argument.
inline void check_strided(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.layout() == at::kStrided, op, ": ", name, " must be a strided (dense) tensor, got ",
              t.layout());
}

// (B, N, 3) floating coordinates.
inline void check_coordinates(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  check_strided(op, name, t);
  TORCH_CHECK(t.dim() == 3 && t.size(2) == 3, op, ": ", name,
              " must have shape (B, N, 3), got shape ", t.sizes());
  TORCH_CHECK(is_supported_float(t.scalar_type()), op, ": ", name,
              " must be float32, float64, float16 or bfloat16, got ", t.scalar_type());
}

// (B, C, N) floating features.
inline void check_features(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  check_strided(op, name, t);
  TORCH_CHECK(t.dim() == 3, op, ": ", name, " must have shape (B, C, N), got shape ", t.sizes());
  TORCH_CHECK(is_supported_float(t.scalar_type()), op, ": ", name,
              " must be float32, float64, float16 or bfloat16, got ", t.scalar_type());
}

inline void check_int64(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  check_strided(op, name, t);
  TORCH_CHECK(t.scalar_type() == at::kLong, op, ": ", name, " must be int64, got ",
              t.scalar_type());
}

inline void check_same_device(const char* op, const char* name, const at::Tensor& t,
                              const char* other_name, const at::Tensor& other) {
  TORCH_CHECK(t.device() == other.device(), op, ": ", name, " is on ", t.device(), " but ",
              other_name, " is on ", other.device());
  TORCH_CHECK(t.is_cpu() || t.is_cuda(), op, ": unsupported device ", t.device(),
              " (expected CPU or CUDA)");
}

inline void check_batch(const char* op, const char* name, const at::Tensor& t,
                        const char* other_name, const at::Tensor& other) {
  TORCH_CHECK(t.size(0) == other.size(0), op, ": ", name, " has batch size ", t.size(0), " (shape ",
              t.sizes(), ") but ", other_name, " has ", other.size(0), " (shape ", other.sizes(),
              ")");
}

// Indices must lie in [0, n). Checked for CPU tensors only: on CUDA it would
// synchronise the stream (the CUDA kernels skip out-of-range indices).
inline void check_index_range(const char* op, const char* name, const at::Tensor& idx, int64_t n) {
  if (!idx.is_cpu() || idx.numel() == 0) {
    return;
  }
  const at::Tensor dense = idx.contiguous();
  const int64_t* data = dense.const_data_ptr<int64_t>();
  int64_t lo = data[0];
  int64_t hi = data[0];
  for (int64_t i = 1; i < dense.numel(); ++i) {
    lo = data[i] < lo ? data[i] : lo;
    hi = data[i] > hi ? data[i] : hi;
  }
  TORCH_CHECK(lo >= 0 && hi < n, op, ": ", name, " must hold indices in [0, ", n,
              "), got values in [", lo, ", ", hi, "]");
}

// Coordinates as the kernels take them: contiguous float32.
inline at::Tensor coordinates_fp32(const at::Tensor& t) {
  return t.to(at::kFloat).contiguous();
}

// furthest_point_sample's arguments (dtrain/kernels/pointnet2.h): xyz
// (B, N, 3) on the CPU or CUDA with N >= 1, npoint in [1, N], start in
// [0, N). Returns the coordinates as the kernels take them.
inline at::Tensor checked_sampling_points(const char* op, const at::Tensor& xyz, int64_t npoint,
                                          int64_t start) {
  check_coordinates(op, "xyz", xyz);
  TORCH_CHECK(xyz.is_cpu() || xyz.is_cuda(), op, ": unsupported device ", xyz.device());
  const int64_t n = xyz.size(1);
  TORCH_CHECK(n >= 1, op, ": xyz must hold at least one point, got shape ", xyz.sizes());
  TORCH_CHECK(npoint >= 1 && npoint <= n, op, ": npoint must be in [1, N] = [1, ", n, "], got ",
              npoint);
  TORCH_CHECK(start >= 0 && start < n, op, ": start must be in [0, N) = [0, ", n, "), got ", start);
  return coordinates_fp32(xyz);
}

}  // namespace dtrain::kernels::detail

// Gather along the point axis (gather_points, group_points) and the backward
// scatter-add shared by gather, group and three_interpolate.
//
//   features [b][c][j], j < n        idx [b][l], l < L
//   out      [b][c][l] = features[b][c][idx[b][l]]
//   grad     [b][c][j] = sum over l with idx[b][l] == j of
//                        weight[b][l] * grad_out[b][c][l / group]
//
// Atomic mode: one thread per (b, c, l) does atomicAdd into a zeroed
// accumulator (fast; summation order varies between runs).
// Deterministic mode (no float atomics): the keys b * n + idx[b][l] are
// sorted stably with their positions e = b * L + l (cub radix sort), the
// start of each key's segment found by binary search, and one thread per
// (b, c, j) sums its segment in increasing l with rounded (unfused) adds:
// the same order and the same bits as the CPU kernel.
#include <cub/device/device_radix_sort.cuh>

#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

constexpr unsigned int kThreads = 256;

template <typename T>
__global__ void gather_kernel(const T* __restrict__ features, const std::int64_t* __restrict__ idx,
                              std::int64_t channels, std::int64_t n, std::int64_t l,
                              std::int64_t total, T* __restrict__ out) {
  for (std::int64_t e = grid_start(); e < total; e += grid_stride()) {
    const std::int64_t i = e % l;
    const std::int64_t row = e / l;  // b * channels + c
    const std::int64_t j = idx[(row / channels) * l + i];
    out[e] = (j >= 0 && j < n) ? features[row * n + j] : from_acc<T>(0);
  }
}

template <typename T>
__device__ inline acc_t<T> term(const T* grad_out, const T* weight, std::int64_t row,
                                std::int64_t out_len, std::int64_t group, std::int64_t b,
                                std::int64_t l, std::int64_t i) {
  const acc_t<T> g = to_acc(grad_out[row * out_len + i / group]);
  return weight != nullptr ? mul_rn(to_acc(weight[b * l + i]), g) : g;
}

template <typename T>
__global__ void scatter_atomic_kernel(const T* __restrict__ grad_out,
                                      const std::int64_t* __restrict__ idx,
                                      const T* __restrict__ weight, std::int64_t channels,
                                      std::int64_t out_len, std::int64_t l, std::int64_t n,
                                      std::int64_t total, acc_t<T>* __restrict__ grad) {
  for (std::int64_t e = grid_start(); e < total; e += grid_stride()) {
    const std::int64_t i = e % l;
    const std::int64_t row = e / l;
    const std::int64_t b = row / channels;
    const std::int64_t j = idx[b * l + i];
    if (j >= 0 && j < n) {
      atomicAdd(grad + row * n + j,
                term(grad_out, weight, row, out_len, out_len ? l / out_len : 1, b, l, i));
    }
  }
}

// keys[e] = b * n + idx (out-of-range indices get key batch * n and sort last).
__global__ void make_keys_kernel(const std::int64_t* __restrict__ idx, std::int64_t batch,
                                 std::int64_t l, std::int64_t n, std::int64_t* __restrict__ keys,
                                 std::int64_t* __restrict__ positions) {
  for (std::int64_t e = grid_start(); e < batch * l; e += grid_stride()) {
    const std::int64_t j = idx[e];
    keys[e] = (j >= 0 && j < n) ? (e / l) * n + j : batch * n;
    positions[e] = e;
  }
}

// offsets[key] = first position of sorted_keys holding a key >= key.
__global__ void segment_offsets_kernel(const std::int64_t* __restrict__ sorted_keys,
                                       std::int64_t items, std::int64_t keys,
                                       std::int64_t* __restrict__ offsets) {
  for (std::int64_t key = grid_start(); key <= keys; key += grid_stride()) {
    std::int64_t lo = 0;
    std::int64_t hi = items;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (sorted_keys[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    offsets[key] = lo;
  }
}

template <typename T>
__global__ void scatter_segment_kernel(const T* __restrict__ grad_out,
                                       const std::int64_t* __restrict__ sorted_positions,
                                       const std::int64_t* __restrict__ offsets,
                                       const T* __restrict__ weight, std::int64_t channels,
                                       std::int64_t out_len, std::int64_t l, std::int64_t n,
                                       std::int64_t total, acc_t<T>* __restrict__ grad) {
  const std::int64_t group = out_len ? l / out_len : 1;
  for (std::int64_t e = grid_start(); e < total; e += grid_stride()) {
    const std::int64_t j = e % n;
    const std::int64_t row = e / n;  // b * channels + c
    const std::int64_t b = row / channels;
    const std::int64_t key = b * n + j;
    acc_t<T> acc = 0;
    for (std::int64_t s = offsets[key]; s < offsets[key + 1]; ++s) {
      const std::int64_t i = sorted_positions[s] - b * l;
      acc = add_rn(acc, term(grad_out, weight, row, out_len, group, b, l, i));
    }
    grad[e] = acc;
  }
}

// Scratch of the deterministic scatter, carved from one buffer.
struct SortScratch {
  std::int64_t* keys_in;
  std::int64_t* keys_out;
  std::int64_t* positions_in;
  std::int64_t* positions_out;
  std::int64_t* offsets;  // batch * n + 1
  void* cub_storage;
  std::size_t cub_bytes;
};

std::size_t align_up(std::size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

int key_bits(std::int64_t max_key) {
  int bits = 1;
  while (bits < 63 && (std::int64_t{1} << bits) <= max_key) {
    ++bits;
  }
  return bits;
}

std::size_t cub_sort_bytes(std::int64_t items) {
  std::size_t bytes = 0;
  DTRAIN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::int64_t*>(nullptr),
      static_cast<std::int64_t*>(nullptr), static_cast<const std::int64_t*>(nullptr),
      static_cast<std::int64_t*>(nullptr), items));
  return bytes;
}

SortScratch carve(void* scratch, std::int64_t batch, std::int64_t l, std::int64_t n) {
  const std::size_t items = align_up(static_cast<std::size_t>(batch * l) * sizeof(std::int64_t));
  char* base = static_cast<char*>(scratch);
  SortScratch s{};
  s.keys_in = reinterpret_cast<std::int64_t*>(base);
  s.keys_out = reinterpret_cast<std::int64_t*>(base + items);
  s.positions_in = reinterpret_cast<std::int64_t*>(base + 2 * items);
  s.positions_out = reinterpret_cast<std::int64_t*>(base + 3 * items);
  s.offsets = reinterpret_cast<std::int64_t*>(base + 4 * items);
  s.cub_storage =
      base + 4 * items + align_up(static_cast<std::size_t>(batch * n + 1) * sizeof(std::int64_t));
  s.cub_bytes = cub_sort_bytes(batch * l);
  return s;
}

template <typename T>
void launch_gather(const void* features, const std::int64_t* idx, std::int64_t batch,
                   std::int64_t channels, std::int64_t n, std::int64_t l, void* out,
                   cudaStream_t stream) {
  const std::int64_t total = batch * channels * l;
  if (total == 0) {
    return;
  }
  gather_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
      static_cast<const T*>(features), idx, channels, n, l, total, static_cast<T*>(out));
  DTRAIN_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_scatter(const void* grad_out, const std::int64_t* idx, const void* weight,
                    std::int64_t batch, std::int64_t channels, std::int64_t out_len, std::int64_t l,
                    std::int64_t n, void* grad_acc, bool deterministic, void* scratch,
                    std::size_t scratch_bytes, cudaStream_t stream) {
  const T* g = static_cast<const T*>(grad_out);
  const T* w = static_cast<const T*>(weight);
  auto* acc = static_cast<acc_t<T>*>(grad_acc);
  if (!deterministic) {
    const std::int64_t total = batch * channels * l;
    if (total == 0) {
      return;
    }
    scatter_atomic_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
        g, idx, w, channels, out_len, l, n, total, acc);
    DTRAIN_CUDA_CHECK_LAUNCH();
    return;
  }
  const std::int64_t total = batch * channels * n;
  if (total == 0) {
    return;
  }
  if (scratch_bytes < scatter_add_points_scratch_bytes(batch, l, n)) {
    throw std::invalid_argument("launch_scatter_add_points: scratch buffer too small");
  }
  SortScratch s = carve(scratch, batch, l, n);
  const std::int64_t items = batch * l;
  if (items > 0) {
    make_keys_kernel<<<grid_for(items, kThreads), kThreads, 0, stream>>>(idx, batch, l, n,
                                                                         s.keys_in, s.positions_in);
    DTRAIN_CUDA_CHECK_LAUNCH();
    DTRAIN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.cub_storage, s.cub_bytes, s.keys_in,
                                                      s.keys_out, s.positions_in, s.positions_out,
                                                      items, 0, key_bits(batch * n), stream));
  }
  const std::int64_t keys = batch * n;
  segment_offsets_kernel<<<grid_for(keys + 1, kThreads), kThreads, 0, stream>>>(s.keys_out, items,
                                                                                keys, s.offsets);
  DTRAIN_CUDA_CHECK_LAUNCH();
  scatter_segment_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
      g, s.positions_out, s.offsets, w, channels, out_len, l, n, total, acc);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_gather_points(FloatType type, const void* features, const std::int64_t* idx,
                          std::int64_t batch, std::int64_t channels, std::int64_t n, std::int64_t l,
                          void* out, cudaStream_t stream) {
  switch (type) {
    case FloatType::kFloat32:
      return launch_gather<float>(features, idx, batch, channels, n, l, out, stream);
    case FloatType::kFloat64:
      return launch_gather<double>(features, idx, batch, channels, n, l, out, stream);
    case FloatType::kFloat16:
      return launch_gather<__half>(features, idx, batch, channels, n, l, out, stream);
    case FloatType::kBFloat16:
      return launch_gather<__nv_bfloat16>(features, idx, batch, channels, n, l, out, stream);
  }
  throw std::invalid_argument("launch_gather_points: unknown FloatType");
}

std::size_t scatter_add_points_scratch_bytes(std::int64_t batch, std::int64_t l, std::int64_t n) {
  const std::size_t items = align_up(static_cast<std::size_t>(batch * l) * sizeof(std::int64_t));
  return 4 * items + align_up(static_cast<std::size_t>(batch * n + 1) * sizeof(std::int64_t)) +
         align_up(cub_sort_bytes(batch * l));
}

void launch_scatter_add_points(FloatType type, const void* grad_out, const std::int64_t* idx,
                               const void* weight, std::int64_t batch, std::int64_t channels,
                               std::int64_t out_len, std::int64_t l, std::int64_t n, void* grad_acc,
                               bool deterministic, void* scratch, std::size_t scratch_bytes,
                               cudaStream_t stream) {
  switch (type) {
    case FloatType::kFloat32:
      return launch_scatter<float>(grad_out, idx, weight, batch, channels, out_len, l, n, grad_acc,
                                   deterministic, scratch, scratch_bytes, stream);
    case FloatType::kFloat64:
      return launch_scatter<double>(grad_out, idx, weight, batch, channels, out_len, l, n, grad_acc,
                                    deterministic, scratch, scratch_bytes, stream);
    case FloatType::kFloat16:
      return launch_scatter<__half>(grad_out, idx, weight, batch, channels, out_len, l, n, grad_acc,
                                    deterministic, scratch, scratch_bytes, stream);
    case FloatType::kBFloat16:
      return launch_scatter<__nv_bfloat16>(grad_out, idx, weight, batch, channels, out_len, l, n,
                                           grad_acc, deterministic, scratch, scratch_bytes, stream);
  }
  throw std::invalid_argument("launch_scatter_add_points: unknown FloatType");
}

}  // namespace dtrain::kernels::cuda

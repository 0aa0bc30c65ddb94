// Gather along the point axis (gather_points, group_points) and the backward
// scatter-add shared by gather, group and three_interpolate.
//
//   features [b][c][j], j < n        idx [b][l], l < L
//   out      [b][c][l] = features[b][c][idx[b][l]]
//   grad     [b][c][j] = sum over l with idx[b][l] == j of
//                        weight[b][l] * grad_out[b][c][l / group]
//
// Gather and atomic scatter: one thread per (b, l) and block of channels
// (channel_block) reads idx[b][l] once; the scatter atomicAdds into a zeroed
// accumulator (fast; summation order varies between runs).
// Deterministic mode (no float atomics): the keys b * n + idx[b][l] are
// sorted stably with their positions e = b * L + l (cub radix sort), the
// start of each key's segment found by binary search, and one thread per
// (b, j) and block of channels sums, for each channel, the segment in
// increasing l with rounded (unfused) adds:
// the same order and the same bits as the CPU kernel.
#include <cub/device/device_radix_sort.cuh>

#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

constexpr unsigned int kThreads = 256;

// Channels per thread: a thread reads its index (and weight) once and moves
// a block of channels with it, with no division per element (64-bit
// division and remainder cost dozens of instructions each). grid.y walks
// the blocks of channels; blocks grow past kChannelBlock only when there
// would be more than the grid's y limit.
constexpr std::int64_t kChannelBlock = 8;
constexpr std::int64_t kMaxGridY = 65535;

std::int64_t channel_block(std::int64_t channels) {
  const std::int64_t wide = (channels + kMaxGridY - 1) / kMaxGridY;
  return wide > kChannelBlock ? wide : kChannelBlock;
}

// Grid over positions (x, grid-stride) by blocks of channels (y).
dim3 position_channel_grid(std::int64_t positions, std::int64_t channels) {
  const std::int64_t block = channel_block(channels);
  return {grid_for(positions, kThreads), static_cast<unsigned int>((channels + block - 1) / block),
          1};
}

// The channels [first, first + count) of this thread's block.
struct ChannelRange {
  std::int64_t first;
  std::int64_t count;
};

__device__ inline ChannelRange channels_of_block(std::int64_t channels, std::int64_t block) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.y) * block;
  return {first, channels - first < block ? channels - first : block};
}

template <typename T>
__global__ void gather_kernel(const T* __restrict__ features, const std::int64_t* __restrict__ idx,
                              std::int64_t channels, std::int64_t n, std::int64_t l,
                              std::int64_t positions, std::int64_t block, T* __restrict__ out) {
  const ChannelRange range = channels_of_block(channels, block);
  for (std::int64_t e = grid_start(); e < positions; e += grid_stride()) {
    const std::int64_t b = e / l;
    const std::int64_t i = e - b * l;
    const std::int64_t j = idx[e];
    const bool valid = j >= 0 && j < n;
    const std::int64_t row = b * channels + range.first;
    const T* from = features + row * n + (valid ? j : 0);
    T* to = out + row * l + i;
#pragma unroll 4
    for (std::int64_t c = 0; c < range.count; ++c) {
      to[c * l] = valid ? from[c * n] : from_acc<T>(0);
    }
  }
}

// One term of the scatter: grad_out[row][i / group], times weight[b][i] when
// there are weights. `row` is b * channels + c.
template <typename T>
__device__ inline acc_t<T> term(const T* grad_out, acc_t<T> weight, bool weighted, std::int64_t row,
                                std::int64_t out_len, std::int64_t at) {
  const acc_t<T> g = to_acc(grad_out[row * out_len + at]);
  return weighted ? mul_rn(weight, g) : g;
}

template <typename T>
__global__ void scatter_atomic_kernel(const T* __restrict__ grad_out,
                                      const std::int64_t* __restrict__ idx,
                                      const acc_t<T>* __restrict__ weight, std::int64_t channels,
                                      std::int64_t out_len, std::int64_t l, std::int64_t n,
                                      std::int64_t positions, std::int64_t block,
                                      acc_t<T>* __restrict__ grad) {
  const ChannelRange range = channels_of_block(channels, block);
  const std::int64_t group = out_len ? l / out_len : 1;
  for (std::int64_t e = grid_start(); e < positions; e += grid_stride()) {
    const std::int64_t j = idx[e];
    if (j < 0 || j >= n) {
      continue;
    }
    const std::int64_t b = e / l;
    const std::int64_t at = (e - b * l) / group;
    const acc_t<T> w = weight != nullptr ? weight[e] : acc_t<T>(1);
    const std::int64_t row = b * channels + range.first;
#pragma unroll 4
    for (std::int64_t c = 0; c < range.count; ++c) {
      atomicAdd(grad + (row + c) * n + j,
                term(grad_out, w, weight != nullptr, row + c, out_len, at));
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

// One thread per (b, j) and block of channels: each channel's sum over the
// segment of j, in increasing l.
template <typename T>
__global__ void scatter_segment_kernel(const T* __restrict__ grad_out,
                                       const std::int64_t* __restrict__ sorted_positions,
                                       const std::int64_t* __restrict__ offsets,
                                       const acc_t<T>* __restrict__ weight, std::int64_t channels,
                                       std::int64_t out_len, std::int64_t l, std::int64_t n,
                                       std::int64_t points, std::int64_t block,
                                       acc_t<T>* __restrict__ grad) {
  const ChannelRange range = channels_of_block(channels, block);
  const std::int64_t group = out_len ? l / out_len : 1;
  for (std::int64_t key = grid_start(); key < points; key += grid_stride()) {
    const std::int64_t b = key / n;
    const std::int64_t j = key - b * n;
    const std::int64_t first = offsets[key];
    const std::int64_t last = offsets[key + 1];
    // kChannelBlock channels at a time, with one sum each in registers: a
    // position is read once for all of them, and their loads are
    // independent. Each sum still runs in increasing l.
    for (std::int64_t c0 = range.first; c0 < range.first + range.count; c0 += kChannelBlock) {
      const std::int64_t row = b * channels + c0;
      const std::int64_t width = range.first + range.count - c0 < kChannelBlock
                                     ? range.first + range.count - c0
                                     : kChannelBlock;
      acc_t<T> acc[kChannelBlock] = {};
      for (std::int64_t s = first; s < last; ++s) {
        const std::int64_t e = sorted_positions[s];
        const acc_t<T> w = weight != nullptr ? weight[e] : acc_t<T>(1);
        const std::int64_t at = (e - b * l) / group;
#pragma unroll
        for (std::int64_t c = 0; c < kChannelBlock; ++c) {
          if (c < width) {
            acc[c] = add_rn(acc[c], term(grad_out, w, weight != nullptr, row + c, out_len, at));
          }
        }
      }
#pragma unroll
      for (std::int64_t c = 0; c < kChannelBlock; ++c) {
        if (c < width) {
          grad[(row + c) * n + j] = acc[c];
        }
      }
    }
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
  const std::int64_t positions = batch * l;
  if (positions == 0 || channels == 0) {
    return;
  }
  gather_kernel<T><<<position_channel_grid(positions, channels), kThreads, 0, stream>>>(
      static_cast<const T*>(features), idx, channels, n, l, positions, channel_block(channels),
      static_cast<T*>(out));
  DTRAIN_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_scatter(const void* grad_out, const std::int64_t* idx, const void* weight,
                    std::int64_t batch, std::int64_t channels, std::int64_t out_len, std::int64_t l,
                    std::int64_t n, void* grad_acc, bool deterministic, void* scratch,
                    std::size_t scratch_bytes, cudaStream_t stream) {
  const T* g = static_cast<const T*>(grad_out);
  const auto* w = static_cast<const acc_t<T>*>(weight);
  auto* acc = static_cast<acc_t<T>*>(grad_acc);
  const std::int64_t block = channel_block(channels);
  if (!deterministic) {
    const std::int64_t positions = batch * l;
    if (positions == 0 || channels == 0) {
      return;
    }
    scatter_atomic_kernel<T><<<position_channel_grid(positions, channels), kThreads, 0, stream>>>(
        g, idx, w, channels, out_len, l, n, positions, block, acc);
    DTRAIN_CUDA_CHECK_LAUNCH();
    return;
  }
  const std::int64_t points = batch * n;
  if (points == 0 || channels == 0) {
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
  segment_offsets_kernel<<<grid_for(points + 1, kThreads), kThreads, 0, stream>>>(
      s.keys_out, items, points, s.offsets);
  DTRAIN_CUDA_CHECK_LAUNCH();
  scatter_segment_kernel<T><<<position_channel_grid(points, channels), kThreads, 0, stream>>>(
      g, s.positions_out, s.offsets, w, channels, out_len, l, n, points, block, acc);
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

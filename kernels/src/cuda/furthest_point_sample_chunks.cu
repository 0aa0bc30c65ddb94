// Furthest point sampling for clouds beyond the register kernel's 8192
// points (Note [FPS in spatial chunks]).
//
// Note [FPS in spatial chunks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The register kernel's idea (Note [FPS on registers with spatial skipping])
// for clouds that fit nowhere on chip. One block of 1024 threads per cloud:
//  - the cloud is first counting-sorted, in the block, by the Morton code of
//    its cell on a 16^3 grid over the cloud's bounding box, into global
//    scratch: (x, y, z, running distance) and the original index per sorted
//    position. Within a cell the order is whatever the atomics made it; the
//    picks do not depend on it (ties are broken by the original index);
//  - the sorted array is cut into chunks of S points (256, or more so that
//    there are at most 2048), compact in space; each chunk's bounding box
//    and best candidate (key, index, sorted position, coordinates) live in
//    shared memory. Warp w owns chunks w, w + 32, w + 64, ...;
//  - each pick, a warp tests 32 of its chunks at once, one per lane: a chunk
//    whose box is no nearer the new centre than the chunk's largest running
//    distance keeps its candidate (exact, as in the register kernel). The
//    warp then updates only the chunks that failed the test, all 32 lanes
//    on one chunk at a time, and writes back the distances that changed;
//  - the warp's candidate is the best of its chunks' candidates, the block's
//    the best of the warps' (one barrier per pick, double-buffered slots),
//    and every warp learns the pick's coordinates from the slot, so no pick
//    waits for a global load;
//  - the warp owning the picked chunk marks the point sampled (the lane that
//    always handles that position, so no other thread reads it first) and
//    the chunk stale, which makes the next pick recompute it.
// Measured on an H200 (B = 8, npoint = N / 4): 16.4 ms at N = 16384 and
// 82.8 ms at 65536, against 20.8 and 317 ms for the one-block kernels.
//
// Each point's running distance is read and written only by one lane of one
// warp, in program order. (The scratch pointers are not __restrict__: the
// kernel writes what it later reads, which must not go through the
// read-only cache.)

#include <cub/block/block_scan.cuh>

#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

using namespace fps;  // fps_common.cuh: keys, Morton codes, box distances

constexpr unsigned int kThreads = 1024;
constexpr unsigned int kWarps = kThreads / kWarp;
constexpr int kGridBits = 4;  // 16^3 cells
constexpr int kCells = 1 << (3 * kGridBits);
constexpr int kCellsPerThread = kCells / kThreads;
constexpr std::int64_t kMinChunk = 256;
constexpr std::int64_t kMaxChunks = 2048;
constexpr unsigned int kStale = 0xffffffffu;  // above every distance key

struct Candidate {
  unsigned int key;    // distance_key of the running distance; kStale: recompute
  unsigned int index;  // original index
  unsigned int position;
  float x, y, z;
};

// 13 words: lanes reading consecutive chunks hit 32 different banks.
struct Chunk {
  float low[3];
  float high[3];
  Candidate best;
  float padding;
};
static_assert(sizeof(Chunk) == 13 * 4);

// Where chunk c lives in the table: warp c % 32's chunks side by side, so
// that the 32 chunks a warp tests at once are consecutive.
__host__ __device__ inline int chunk_slot(int c, int rows) {
  return (c % static_cast<int>(kWarps)) * rows + c / static_cast<int>(kWarps);
}

__host__ __device__ inline int chunk_rows(int chunks) {
  return (chunks + static_cast<int>(kWarps) - 1) / static_cast<int>(kWarps);
}

// a better than b: larger distance, then lower index.
__device__ inline bool better(const Candidate& a, const Candidate& b) {
  return a.key > b.key || (a.key == b.key && a.index < b.index);
}

// The warp's best of one candidate per lane; every lane gets it.
__device__ inline Candidate warp_best(const Candidate& mine) {
  const unsigned int key = __reduce_max_sync(kFullMask, mine.key);
  const unsigned int index = __reduce_min_sync(kFullMask, mine.key == key ? mine.index : kNoIndex);
  const int owner = __ffs(__ballot_sync(kFullMask, mine.key == key && mine.index == index)) - 1;
  return {key,
          index,
          __shfl_sync(kFullMask, mine.position, owner),
          __shfl_sync(kFullMask, mine.x, owner),
          __shfl_sync(kFullMask, mine.y, owner),
          __shfl_sync(kFullMask, mine.z, owner)};
}

std::int64_t chunk_size(std::int64_t n) {
  std::int64_t size = kMinChunk;
  while ((n + size - 1) / size > kMaxChunks) {
    size *= 2;
  }
  return size;
}

std::size_t shared_bytes(std::int64_t n) {
  const std::int64_t chunks = (n + chunk_size(n) - 1) / chunk_size(n);
  const std::size_t chunk_bytes =
      static_cast<std::size_t>(kWarps * chunk_rows(static_cast<int>(chunks))) * sizeof(Chunk);
  const std::size_t cell_bytes = kCells * sizeof(unsigned int);
  return chunk_bytes > cell_bytes ? chunk_bytes : cell_bytes;
}

// Counting sort of the cloud by cell into sorted/order; running distances
// start at +inf, -1 for the start point.
__device__ void sort_by_cell(const float* points, int n, int start, unsigned int* cells,
                             float4* sorted, int* order, float* scratch) {
  using Scan = cub::BlockScan<unsigned int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  float low[3], high[3];
  fps::block_bounding_box<kThreads>(points, n, scratch, low, high);
  for (int c = threadIdx.x; c < kCells; c += kThreads) {
    cells[c] = 0;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < n; j += kThreads) {
    const float p[3] = {points[3 * j], points[3 * j + 1], points[3 * j + 2]};
    atomicAdd(&cells[fps::morton_code<kGridBits>(p, low, high)], 1u);
  }
  __syncthreads();
  unsigned int counts[kCellsPerThread];
#pragma unroll
  for (int k = 0; k < kCellsPerThread; ++k) {
    counts[k] = cells[threadIdx.x * kCellsPerThread + k];
  }
  Scan(scan_storage).ExclusiveSum(counts, counts);
#pragma unroll
  for (int k = 0; k < kCellsPerThread; ++k) {
    cells[threadIdx.x * kCellsPerThread + k] = counts[k];  // each cell's next free position
  }
  __syncthreads();
  for (int j = threadIdx.x; j < n; j += kThreads) {
    const float p[3] = {points[3 * j], points[3 * j + 1], points[3 * j + 2]};
    const unsigned int at = atomicAdd(&cells[fps::morton_code<kGridBits>(p, low, high)], 1u);
    sorted[at] = make_float4(p[0], p[1], p[2], j == start ? -1.0f : INFINITY);
    order[at] = j;
  }
  __syncthreads();  // also orders the global writes above before the block's reads
}

// Recomputes one chunk's running distances against the centre (all lanes of
// the warp) and returns its best candidate.
__device__ Candidate update_chunk(float4* sorted, const int* order, int begin, int end, float cx,
                                  float cy, float cz) {
  const unsigned int lane = threadIdx.x % kWarp;
  Candidate mine{0u, kNoIndex, 0u, 0.0f, 0.0f, 0.0f};
  float best = -3.0f;
  for (int p = begin + static_cast<int>(lane); p < end; p += kWarp) {
    const float4 point = sorted[p];
    const float d = squared_distance(cx, cy, cz, point.x, point.y, point.z);
    const float current = d < point.w ? d : point.w;
    if (current != point.w) {
      sorted[p].w = current;
    }
    if (current > best || (current == best && static_cast<unsigned int>(order[p]) < mine.index)) {
      best = current;
      mine = {0u,
              static_cast<unsigned int>(order[p]),
              static_cast<unsigned int>(p),
              point.x,
              point.y,
              point.z};
    }
  }
  mine.key = distance_key(best);
  return warp_best(mine);
}

__global__ void __launch_bounds__(kThreads)
    fps_chunks_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint, int start,
                      int chunk, float4* sorted_all, int* order_all,
                      std::int64_t* __restrict__ out) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ Candidate slots[2][kWarps];
  __shared__ float scratch[kWarps];
  const float* points = xyz + static_cast<std::int64_t>(blockIdx.x) * n * 3;
  float4* sorted = sorted_all + static_cast<std::int64_t>(blockIdx.x) * n;
  int* order = order_all + static_cast<std::int64_t>(blockIdx.x) * n;
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint;

  sort_by_cell(points, n, start, reinterpret_cast<unsigned int*>(shared), sorted, order, scratch);

  Chunk* chunks = reinterpret_cast<Chunk*>(shared);  // the cell counts are done with
  const int count = (n + chunk - 1) / chunk;
  const int rows = chunk_rows(count);
  const unsigned int lane = threadIdx.x % kWarp;
  const unsigned int warp = threadIdx.x / kWarp;
  for (int c = static_cast<int>(warp); c < count; c += kWarps) {
    float low[3] = {INFINITY, INFINITY, INFINITY};
    float high[3] = {-INFINITY, -INFINITY, -INFINITY};
    const int end = min(n, (c + 1) * chunk);
    for (int p = c * chunk + static_cast<int>(lane); p < end; p += kWarp) {
      const float4 point = sorted[p];
      grow_box(low, high, {point.x, point.y, point.z});
    }
    warp_box(low, high);
    if (lane == 0) {
      Chunk& state = chunks[chunk_slot(c, rows)];
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        state.low[a] = low[a];
        state.high[a] = high[a];
      }
      state.best = {kStale, kNoIndex, 0u, 0.0f, 0.0f, 0.0f};
    }
  }
  __syncwarp();  // a warp touches only its own chunks from here on

  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  float cx = points[3 * start];
  float cy = points[3 * start + 1];
  float cz = points[3 * start + 2];
  // Lane l of warp w looks after chunks w + 32 * (l + 32 * round).
  constexpr int kStride = kWarps * kWarp;
  for (std::int64_t i = 1; i < npoint; ++i) {
    Candidate mine{0u, kNoIndex, 0u, 0.0f, 0.0f, 0.0f};
    for (int first = static_cast<int>(warp); first < count; first += kStride) {
      const int c = first + static_cast<int>(lane * kWarps);
      const Chunk* state = c < count ? &chunks[chunk_slot(c, rows)] : nullptr;
      bool recompute = false;
      if (state != nullptr) {
        const unsigned int key = state->best.key;
        const float box = fps::box_squared_distance(cx, cy, cz, state->low, state->high);
        recompute = key == kStale || !(box >= key_distance(key));
      }
      for (unsigned int pending = __ballot_sync(kFullMask, recompute); pending != 0;
           pending &= pending - 1) {
        const int target = first + (__ffs(pending) - 1) * static_cast<int>(kWarps);
        const Candidate best =
            update_chunk(sorted, order, target * chunk, min(n, (target + 1) * chunk), cx, cy, cz);
        if (lane == 0) {
          chunks[chunk_slot(target, rows)].best = best;
        }
      }
      __syncwarp();
      if (state != nullptr && better(state->best, mine)) {
        mine = state->best;
      }
    }
    Candidate* buffer = slots[i & 1];
    const Candidate warp_candidate = warp_best(mine);
    if (lane == 0) {
      buffer[warp] = warp_candidate;
    }
    __syncthreads();
    const Candidate pick = warp_best(buffer[lane]);  // kWarps == kWarp: one slot per lane
    const int picked_chunk = static_cast<int>(pick.position) / chunk;
    if (picked_chunk % static_cast<int>(kWarps) == static_cast<int>(warp) &&
        pick.position % kWarp == lane) {
      sorted[pick.position].w = -1.0f;
      chunks[chunk_slot(picked_chunk, rows)].best.key = kStale;
    }
    __syncwarp();
    if (threadIdx.x == 0) {
      picks[i] = pick.index;
    }
    cx = pick.x;
    cy = pick.y;
    cz = pick.z;
  }
}

}  // namespace

std::size_t fps_chunks_shared_bytes(std::int64_t n) {
  return shared_bytes(n);
}

void launch_fps_chunks(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                       std::int64_t start, void* scratch, std::int64_t* out, cudaStream_t stream) {
  static_assert(kWarps == kWarp, "the block's last reduction gives each lane one warp's slot");
  static_assert(kCells % kThreads == 0);
  if (batch == 0) {
    return;
  }
  const std::size_t bytes = shared_bytes(n);
  DTRAIN_CUDA_CHECK(cudaFuncSetAttribute(
      fps_chunks_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  auto* sorted = static_cast<float4*>(scratch);
  auto* order = reinterpret_cast<int*>(sorted + batch * n);
  fps_chunks_kernel<<<static_cast<unsigned int>(batch), kThreads, bytes, stream>>>(
      xyz, static_cast<int>(n), npoint, static_cast<int>(start), static_cast<int>(chunk_size(n)),
      sorted, order, out);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace dtrain::kernels::cuda

// Furthest point sampling on CPU: one task per batch element, each keeping
// the points as structure-of-arrays (x[], y[], z[]) and the running minimum
// squared distance dist[] to the sampled set; or, for a batch smaller than
// the thread pool, every thread on one large cloud at a time (Note [FPS
// across threads]).
//
// Note [FPS distance]: d = dx*dx + dy*dy + dz*dz in float32, evaluated left
// to right with no fused multiply-add (the CUDA kernel uses __fmul_rn and
// __fadd_rn), so CPU and CUDA pick the same indices. Sampled points get
// dist = -1, below every real distance, so they can never win the argmax
// again; the argmax takes the lowest index among equal maxima.
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../dispatch.h"
#include "fps_update.h"
#include "furthest_point_sample_spatial.h"

namespace dtrain::kernels::detail {

namespace {

// One cloud's x[], y[], z[] and dist[] in one allocation.
struct CloudStorage {
  explicit CloudStorage(int64_t n)
      : data(static_cast<size_t>(4 * n)), x(data.data()), y(x + n), z(y + n), dist(z + n) {}

  // Copies points [begin, end) of xyz (B=1, N, 3) in; their distances start
  // at +inf, the start point's at -1 (sampled).
  void fill(const float* xyz, int64_t begin, int64_t end, int64_t start) {
    for (int64_t j = begin; j < end; ++j) {
      x[j] = xyz[3 * j];
      y[j] = xyz[3 * j + 1];
      z[j] = xyz[3 * j + 2];
      dist[j] = j == start ? -1.0f : std::numeric_limits<float>::infinity();
    }
  }

  Cloud chunk(int64_t begin, int64_t end) const {
    return {x + begin, y + begin, z + begin, dist + begin, end - begin};
  }

  std::vector<float> data;
  float* x;
  float* y;
  float* z;
  float* dist;
};

void sample_one(const float* xyz, int64_t n, int64_t npoint, int64_t start, int64_t* out) {
  CloudStorage cloud(n);
  cloud.fill(xyz, 0, n, start);
  const Cloud all = cloud.chunk(0, n);
  int64_t selected = start;
  out[0] = selected;
  for (int64_t i = 1; i < npoint; ++i) {
    selected = update(all, cloud.x[selected], cloud.y[selected], cloud.z[selected]).index;
    out[i] = selected;
    cloud.dist[selected] = -1.0f;
  }
}

// Note [FPS across threads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// One task per cloud leaves threads idle when the batch is smaller than the
// pool (a single cloud of a million points runs on one core). Then each
// cloud is split into one contiguous chunk per thread, and every pick is:
// each thread updates its chunk and writes its chunk's first maximum to a
// slot; one barrier; every thread reduces all slots itself (largest value,
// then lowest index: the chunks are in index order, so this is the
// single-thread answer) and the owner of the pick marks it sampled. The
// slots alternate between two buffers, so a thread's next write never lands
// in a slot another thread is still reading, and one barrier per pick
// suffices. Chunks of at least kPointsPerThread points keep the barrier
// small against the work.
constexpr int64_t kPointsPerThread = 16384;

int split_threads(int64_t batch, int64_t n) {
  if (at::in_parallel_region()) {
    return 1;
  }
  const int64_t pool = at::get_num_threads();
  if (batch >= pool) {
    return 1;
  }
  return static_cast<int>(std::clamp<int64_t>(n / kPointsPerThread, 1, pool));
}

void sample_one_split(const float* xyz, int64_t n, int64_t npoint, int64_t start, int64_t* out,
                      int threads) {
  CloudStorage cloud(n);
  std::vector<Best> slots(static_cast<size_t>(2 * threads));
  out[0] = start;
#pragma omp parallel num_threads(threads)
  {
    const int team = omp_get_num_threads();  // the runtime may grant fewer
    const int t = omp_get_thread_num();
    const int64_t begin = n * t / team;
    const int64_t end = n * (t + 1) / team;
    cloud.fill(xyz, begin, end, start);
#pragma omp barrier
    const Cloud chunk = cloud.chunk(begin, end);
    int64_t selected = start;
    for (int64_t i = 1; i < npoint; ++i) {
      Best local = update(chunk, cloud.x[selected], cloud.y[selected], cloud.z[selected]);
      local.index += begin;
      Best* buffer = slots.data() + (i & 1) * team;
      buffer[t] = local;
#pragma omp barrier
      Best best = buffer[0];
      for (int u = 1; u < team; ++u) {
        if (buffer[u].value > best.value) {  // equal values: the earlier chunk's lower index
          best = buffer[u];
        }
      }
      selected = best.index;
      if (selected >= begin && selected < end) {
        cloud.dist[selected] = -1.0f;
      }
      if (t == 0) {
        out[i] = selected;
      }
    }
  }
}

// CpuFpsPath (dtrain/kernels/pointnet2.h): kAuto, kPlain (the loop over
// every point), kSpatial (Note [FPS in spatial chunks on the CPU]) or kSplit
// (Note [FPS across threads]). kAuto takes the spatial kernel for clouds of
// kSpatialPoints or more when the picks repay its setup (sorting the
// cloud), which costs about as much as kSetupPasses passes of the plain
// loop over the cloud on one thread: more picks than that, times the
// threads the split loop would use. On the 2-core development machine:
// B = 8, N = 16384 -> 4096 in 20-30 ms against 150-190 (plain), N = 4096 ->
// 1024 3-6 against 10-12 ms, N = 1024 -> 256 0.87 against 0.65 ms; one
// cloud of 65536 -> 1024 10.5 ms against 19-26 (split, 2 threads); 2^20 ->
// 256 119 against 141 ms, 2^20 -> 4096 187 ms.
constexpr int64_t kSpatialPoints = 2048;
constexpr int64_t kSetupPasses = 100;

}  // namespace

at::Tensor furthest_point_sample_cpu(const at::Tensor& xyz, int64_t npoint, int64_t start,
                                     CpuFpsPath path) {
  const int64_t batch = xyz.size(0);
  const int64_t n = xyz.size(1);
  at::Tensor out = at::empty({batch, npoint}, xyz.options().dtype(at::kLong));
  const float* points = xyz.const_data_ptr<float>();
  int64_t* indices = out.mutable_data_ptr<int64_t>();
  const bool int32_indices = n <= std::numeric_limits<int32_t>::max();
  const bool spatial_pays =
      n >= kSpatialPoints && int32_indices && npoint > kSetupPasses * split_threads(batch, n);
  if (path == CpuFpsPath::kSpatial || (path == CpuFpsPath::kAuto && spatial_pays)) {
    TORCH_CHECK(int32_indices, "CpuFpsPath::kSpatial takes at most 2^31 - 1 points, got ", n);
    at::parallel_for(0, batch, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        if (!sample_one_spatial(points + b * n * 3, n, npoint, start, indices + b * npoint)) {
          sample_one(points + b * n * 3, n, npoint, start, indices + b * npoint);
        }
      }
    });
    return out;
  }
  const int threads = path == CpuFpsPath::kSplit   ? std::max(2, split_threads(batch, n))
                      : path == CpuFpsPath::kPlain ? 1
                                                   : split_threads(batch, n);
  if (threads > 1) {
    for (int64_t b = 0; b < batch; ++b) {
      sample_one_split(points + b * n * 3, n, npoint, start, indices + b * npoint, threads);
    }
    return out;
  }
  at::parallel_for(0, batch, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      sample_one(points + b * n * 3, n, npoint, start, indices + b * npoint);
    }
  });
  return out;
}

}  // namespace dtrain::kernels::detail

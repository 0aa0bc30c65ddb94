// Furthest point sampling: the choice of kernel (Note [Which FPS kernel]),
// and the plain one-block-per-cloud kernel, for a GPU whose shared memory is
// too small for the chunk table, and as the benchmarks' baseline.
//
// Note [Which FPS kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Up to 8192 points, the fastest on this GPU of the kernels that hold the
// cloud on chip, measured on the first input of each kind (Note [Choosing
// the CUDA FPS kernel by timing it] in furthest_point_sample_fastest.cu):
// the register kernel (Note [FPS on registers with spatial skipping]) in
// its settings, and the leader kernel (Note [FPS with one picking warp]) in
// its; with measuring off, the register kernel. From 8193 to 65536 on sm_90
// and later, the striped
// kernel on a cluster of 2, 4 or 8 blocks per cloud with rounds of up to 4
// picks (Note [FPS on a cluster of blocks]); beyond, or before sm_90, the
// chunk kernel (Note [FPS in spatial chunks]). Measured on an H200 (B = 8,
// npoint = N / 4, tests/gpu/README.md): at N = 16384 the striped kernel took
// 7.4 ms against the chunk kernel's 16.3, at N = 65536 24.7 against 81.5. Up
// to 8192 points it is slower than the register kernel (B = 32, N = 8192 ->
// 1024: 0.81 ms against 0.75 with one block per cloud, 1.3 to 7.3 ms on
// clusters of 2 to 8 blocks, whose barriers cost more than their SMs give),
// so it is not among the kernels measured there. The plan takes the
// clusters only where this GPU can run one (fps_striped_runs_here: a small
// MIG slice may hold none), else the chunk kernel.
// One block per batch element loops over the npoint picks. Each pick, every
// thread updates its strided share of dist[j] = min(dist[j], d(j, last
// pick)) and keeps its own first maximum; warp shuffles then shared memory
// reduce (value, index) to the block's maximum with the lowest index (Note
// [FPS distance] in src/cpu/furthest_point_sample.cpp; sampled points hold
// dist = -1).
//
//   xyz   [b][j][x y z]  float32, global
//   kShared: shared memory holds x[n] y[n] z[n] dist[n] (16 bytes a point)
//   else:    dist lives in dist_scratch[b][n] (global), points read from xyz

#include <cstdlib>
#include <string>
#include <vector>

#include "../kernel_choice.h"
#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

constexpr unsigned int kWarp = 32;
constexpr unsigned int kMaxThreads = 1024;

struct Candidate {
  float value;
  std::int64_t index;
};

__device__ inline bool better(const Candidate& a, const Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

__device__ inline Candidate warp_best(Candidate c) {
  for (unsigned int offset = kWarp / 2; offset > 0; offset /= 2) {
    const Candidate other{__shfl_down_sync(0xffffffffu, c.value, offset),
                          __shfl_down_sync(0xffffffffu, c.index, offset)};
    if (better(other, c)) {
      c = other;
    }
  }
  return c;
}

template <bool kShared>
__global__ void __launch_bounds__(kMaxThreads)
    furthest_point_sample_kernel(const float* __restrict__ xyz, std::int64_t n, std::int64_t npoint,
                                 std::int64_t start, float* __restrict__ dist_scratch,
                                 std::int64_t* __restrict__ out) {
  extern __shared__ float shared_points[];
  __shared__ float warp_value[kMaxThreads / kWarp];
  __shared__ std::int64_t warp_index[kMaxThreads / kWarp];
  __shared__ std::int64_t selected_shared;

  const std::int64_t b = blockIdx.x;
  const float* points = xyz + b * n * 3;
  float* xs = shared_points;
  float* ys = xs + n;
  float* zs = ys + n;
  float* dist = kShared ? zs + n : dist_scratch + b * n;
  std::int64_t* picks = out + b * npoint;

  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    if constexpr (kShared) {
      xs[j] = points[3 * j];
      ys[j] = points[3 * j + 1];
      zs[j] = points[3 * j + 2];
    }
    dist[j] = j == start ? -1.0f : __int_as_float(0x7f800000);  // +inf; sampled: -1
  }
  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  __syncthreads();

  const unsigned int lane = threadIdx.x % kWarp;
  const unsigned int warp = threadIdx.x / kWarp;
  const unsigned int warps = (blockDim.x + kWarp - 1) / kWarp;
  std::int64_t selected = start;
  for (std::int64_t i = 1; i < npoint; ++i) {
    float cx, cy, cz;
    if constexpr (kShared) {
      cx = xs[selected];
      cy = ys[selected];
      cz = zs[selected];
    } else {
      cx = points[3 * selected];
      cy = points[3 * selected + 1];
      cz = points[3 * selected + 2];
    }
    Candidate best{-2.0f, n};
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float px, py, pz;
      if constexpr (kShared) {
        px = xs[j];
        py = ys[j];
        pz = zs[j];
      } else {
        px = points[3 * j];
        py = points[3 * j + 1];
        pz = points[3 * j + 2];
      }
      const float d = squared_distance(cx, cy, cz, px, py, pz);
      const float current = d < dist[j] ? d : dist[j];
      dist[j] = current;
      if (current > best.value) {  // j increases: first maximum per thread
        best = {current, j};
      }
    }
    best = warp_best(best);
    if (lane == 0) {
      warp_value[warp] = best.value;
      warp_index[warp] = best.index;
    }
    __syncthreads();
    if (warp == 0) {
      best = lane < warps ? Candidate{warp_value[lane], warp_index[lane]} : Candidate{-2.0f, n};
      best = warp_best(best);
      if (lane == 0) {
        selected_shared = best.index;
        picks[i] = best.index;
        dist[best.index] = -1.0f;
      }
    }
    __syncthreads();
    selected = selected_shared;
  }
}

int device_attribute(cudaDeviceAttr attribute) {
  int device = 0;
  DTRAIN_CUDA_CHECK(cudaGetDevice(&device));
  int value = 0;
  DTRAIN_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

enum class FpsPath { kAuto, kRegisters, kLeader, kStriped, kChunks, kShared, kGlobal };

FpsPath requested_path() {
  return static_cast<FpsPath>(detail::env_choice(
      "DTRAIN_CUDA_FPS", {"auto", "registers", "leader", "striped", "chunks", "shared", "global"}));
}

// DTRAIN_CUDA_FPS_THREADS: the leader kernel's threads a block (0: its
// default, Note [FPS with one picking warp]: 1024 threads of up to 8 points
// for one pick a round, 512 of up to 16 for more, which need the registers).
int requested_threads() {
  constexpr int kThreads[] = {0, 512, 1024};
  return kThreads[detail::env_choice("DTRAIN_CUDA_FPS_THREADS", {"auto", "512", "1024"})];
}

// DTRAIN_CUDA_FPS_LANE: how the register kernel's threads find their
// furthest point (0 auto, 1 pass, 2 tree).
enum class LaneChoice { kAuto, kPass, kTree };
LaneChoice requested_lane() {
  return static_cast<LaneChoice>(
      detail::env_choice("DTRAIN_CUDA_FPS_LANE", {"auto", "pass", "tree"}));
}

// The register kernel's lane for rounds of `round` picks: by default a pass
// for one pick a round and the tree for more, which alone gives a thread's
// runner-up (Note [FPS on registers in rounds of picks]).
FpsLane register_lane(LaneChoice choice, int round) {
  if (choice == LaneChoice::kPass && round > 1) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS_LANE=pass: rounds of " + std::to_string(round) +
                                " picks (DTRAIN_CUDA_FPS_ROUND) need the lane tree");
  }
  return choice == LaneChoice::kTree || (choice == LaneChoice::kAuto && round > 1) ? FpsLane::kTree
                                                                                   : FpsLane::kPass;
}

// DTRAIN_CUDA_FPS_ROUND: the largest number of picks per round (0: each
// kernel's default).
int requested_round() {
  constexpr int kRounds[] = {0, 1, 2, 4};
  return kRounds[detail::env_choice("DTRAIN_CUDA_FPS_ROUND", {"auto", "1", "2", "4"})];
}

// Picks per round by default when a kernel is forced: the striped kernel's
// rounds of 4 measured fastest on it (Note [Which FPS kernel]); one for the
// register and leader kernels, whose rounds the plan measures when nothing
// is forced.
constexpr int kStripedRound = 4;
constexpr int kRegistersRound = 1;
constexpr int kLeaderRound = 1;

// DTRAIN_CUDA_FPS_MEASURE: whether the plan times the kernels that hold a
// cloud on chip and takes the fastest (Note [Choosing the CUDA FPS kernel
// by timing it]).
bool measure_requested() {
  return detail::env_choice("DTRAIN_CUDA_FPS_MEASURE", {"on", "off"}) == 0;
}

// The settings of the kernels that hold a cloud of up to 8192 points on
// chip, the register kernel's default first (it runs before a measurement,
// and wins ties). The leader's are those whose shared memory fits for the
// largest cloud of n's kind (n rounded up to a power of two), so that one
// kind has one list.
std::vector<FpsCandidate> on_chip_candidates(std::int64_t n, std::int64_t shared_limit) {
  std::vector<FpsCandidate> candidates = {
      {{FpsKernel::kRegisters, 0, 1, 0, FpsLane::kPass}, "registers"},
      {{FpsKernel::kRegisters, 0, 1, 0, FpsLane::kTree}, "registers_lane_tree"},
      {{FpsKernel::kRegisters, 0, 2, 0, FpsLane::kTree}, "registers_round2_lane_tree"},
      {{FpsKernel::kRegisters, 0, 4, 0, FpsLane::kTree}, "registers_round4_lane_tree"},
  };
  const std::int64_t largest = power_of_two_at_least(n);
  const FpsCandidate leaders[] = {
      {{FpsKernel::kLeader, 0, 1, 0, FpsLane::kTree, 1024}, "leader_1024"},
      {{FpsKernel::kLeader, 0, 1, 0, FpsLane::kTree, 512}, "leader_512"},
      {{FpsKernel::kLeader, 0, 2, 0, FpsLane::kTree, 512}, "leader_512_round2"},
      {{FpsKernel::kLeader, 0, 4, 0, FpsLane::kTree, 512}, "leader_512_round4"},
  };
  for (const FpsCandidate& leader : leaders) {
    if (static_cast<std::int64_t>(fps_leader_shared_bytes(largest, leader.plan.threads)) <=
        shared_limit) {
      candidates.push_back(leader);
    }
  }
  return candidates;
}

// DTRAIN_CUDA_FPS_CLUSTER: the striped kernel's blocks per cloud (0: the
// fewest that hold the cloud).
int requested_cluster() {
  constexpr int kClusters[] = {0, 1, 2, 4, 8};
  return kClusters[detail::env_choice("DTRAIN_CUDA_FPS_CLUSTER", {"auto", "1", "2", "4", "8"})];
}

void launch_one_block_per_cloud(bool shared, const float* xyz, std::int64_t batch, std::int64_t n,
                                std::int64_t npoint, std::int64_t start, float* dist_scratch,
                                std::int64_t* out, cudaStream_t stream) {
  std::int64_t threads = n < kMaxThreads ? n : kMaxThreads;
  threads = (threads + kWarp - 1) / kWarp * kWarp;
  const std::int64_t shared_bytes = 4 * n * static_cast<std::int64_t>(sizeof(float));
  if (shared) {
    const auto kernel = furthest_point_sample_kernel<true>;
    DTRAIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(shared_bytes)));
    kernel<<<static_cast<unsigned int>(batch), static_cast<unsigned int>(threads),
             static_cast<std::size_t>(shared_bytes), stream>>>(xyz, n, npoint, start, dist_scratch,
                                                               out);
  } else {
    furthest_point_sample_kernel<false>
        <<<static_cast<unsigned int>(batch), static_cast<unsigned int>(threads), 0, stream>>>(
            xyz, n, npoint, start, dist_scratch, out);
  }
  DTRAIN_CUDA_CHECK_LAUNCH();
}

// The dynamic shared memory a block may ask for, leaving room for the
// kernels' static shared memory.
std::int64_t dynamic_shared_limit() {
  constexpr std::int64_t kStaticReserve = 8192;
  return device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) - kStaticReserve;
}

}  // namespace

FpsPlan plan_furthest_point_sample(std::int64_t batch, std::int64_t n) {
  constexpr std::int64_t kRegisterPoints = 8192;
  const std::int64_t limit = dynamic_shared_limit();
  const bool fits_shared = 4 * n * static_cast<std::int64_t>(sizeof(float)) <= limit;
  const bool fits_registers =
      n <= kRegisterPoints && static_cast<std::int64_t>(fps_registers_shared_bytes(n)) <= limit;
  const std::int64_t striped_points =
      fps_striped_max_points(device_attribute(cudaDevAttrComputeCapabilityMajor));
  const int requested = requested_round();  // checked on every call, as the path is
  const int cluster = requested_cluster();
  const LaneChoice lane = requested_lane();
  const int threads = requested_threads();
  const bool measure = measure_requested();
  const bool fits_chunks = static_cast<std::int64_t>(fps_chunks_shared_bytes(n)) <= limit;
  const FpsPath requested_kernel = requested_path();
  FpsPath path = requested_kernel;
  if (path == FpsPath::kAuto) {
    // Asked only within its range (beyond, its count throws); a GPU that
    // cannot hold its cluster (a small MIG slice) keeps the chunk kernel.
    const bool fits_striped =
        n <= striped_points && static_cast<std::int64_t>(fps_striped_shared_bytes(n, 0)) <= limit &&
        fps_striped_runs_here(n, requested == 0 ? kStripedRound : requested, 0);
    path = fits_registers ? FpsPath::kRegisters
                          : (fits_striped ? FpsPath::kStriped
                                          : (fits_chunks ? FpsPath::kChunks : FpsPath::kGlobal));
  }
  const bool forced = requested_kernel != FpsPath::kAuto || requested != 0 || cluster != 0 ||
                      lane != LaneChoice::kAuto || threads != 0;
  if (path == FpsPath::kRegisters && !forced && measure) {
    return {FpsKernel::kFastest, 0};
  }
  const int leader_round = requested == 0 ? kLeaderRound : requested;
  const int leader_threads = threads != 0 ? threads : (leader_round == 1 ? 1024 : 512);
  if (path == FpsPath::kLeader && leader_threads == 1024 && leader_round > 1) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS_THREADS=1024: the leader kernel takes rounds of " +
                                std::to_string(leader_round) +
                                " picks (DTRAIN_CUDA_FPS_ROUND) on 512 threads only");
  }
  if (path == FpsPath::kLeader &&
      (n > kRegisterPoints ||
       static_cast<std::int64_t>(fps_leader_shared_bytes(n, leader_threads)) > limit)) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS=leader: the leader kernel takes at most " +
                                std::to_string(kRegisterPoints) +
                                " points (and their shared memory), got " + std::to_string(n));
  }
  if (path == FpsPath::kRegisters && !fits_registers) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS=registers: the register kernel takes at most " +
                                std::to_string(kRegisterPoints) +
                                " points (and their shared memory), got " + std::to_string(n));
  }
  // The striped kernel's shared memory, asked only when it is forced: its
  // count throws for a cloud that the requested cluster cannot hold.
  if (path == FpsPath::kStriped &&
      (n > striped_points ||
       static_cast<std::int64_t>(fps_striped_shared_bytes(n, cluster)) > limit)) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS=striped: the striped kernel takes at most " +
                                std::to_string(striped_points) +
                                " points on this GPU (and their shared memory), got " +
                                std::to_string(n));
  }
  if (path == FpsPath::kChunks && !fits_chunks) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS=chunks: the chunk table of " + std::to_string(n) +
                                " points does not fit in shared memory");
  }
  if (path == FpsPath::kShared && !fits_shared) {
    throw std::invalid_argument("DTRAIN_CUDA_FPS=shared: " + std::to_string(n) +
                                " points do not fit in shared memory");
  }
  const auto points = static_cast<std::size_t>(batch * n);
  switch (path) {
    case FpsPath::kRegisters: {
      const int registers_round = requested == 0 ? kRegistersRound : requested;
      return {FpsKernel::kRegisters, 0, registers_round, 0, register_lane(lane, registers_round)};
    }
    case FpsPath::kLeader:  // the lane tree
      return {FpsKernel::kLeader, 0, leader_round, 0, FpsLane::kTree, leader_threads};
    case FpsPath::kStriped:  // by default rounds of 4, the fewest blocks that hold the cloud
      return {FpsKernel::kStriped, 0, requested == 0 ? kStripedRound : requested, cluster};
    case FpsPath::kChunks:  // sorted (x, y, z, distance) and original index per point
      return {FpsKernel::kChunks, points * (sizeof(float) * 4 + sizeof(int))};
    case FpsPath::kShared:
      return {FpsKernel::kShared, 0};
    default:  // running distances
      return {FpsKernel::kGlobal, points * sizeof(float)};
  }
}

void launch_furthest_point_sample(const FpsPlan& plan, const float* xyz, std::int64_t batch,
                                  std::int64_t n, std::int64_t npoint, std::int64_t start,
                                  void* scratch, std::int64_t* out, cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  switch (plan.kernel) {
    case FpsKernel::kFastest:
      return launch_fps_fastest(on_chip_candidates(n, dynamic_shared_limit()), xyz, batch, n,
                                npoint, start, out, stream);
    case FpsKernel::kRegisters:
      return launch_fps_registers(plan.lane, plan.round, xyz, batch, n, npoint, start, out, stream);
    case FpsKernel::kLeader:
      return launch_fps_leader(plan.threads, plan.round, xyz, batch, n, npoint, start, out, stream);
    case FpsKernel::kStriped:
      return launch_fps_striped(plan.round, plan.cluster, xyz, batch, n, npoint, start, out,
                                stream);
    case FpsKernel::kChunks:
      return launch_fps_chunks(xyz, batch, n, npoint, start, scratch, out, stream);
    case FpsKernel::kShared:
    case FpsKernel::kGlobal:
      return launch_one_block_per_cloud(plan.kernel == FpsKernel::kShared, xyz, batch, n, npoint,
                                        start, static_cast<float*>(scratch), out, stream);
  }
}

}  // namespace dtrain::kernels::cuda

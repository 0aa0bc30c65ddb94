// Furthest point sampling with the points on chip, skipping decided per
// chunk of 32 points, and several picks per barrier when they cannot
// disturb one another (Note [FPS on registers in striped chunks], Note [FPS
// in rounds of independent picks]): up to 8192 points in one block per
// cloud, up to 65536 in a cluster of blocks (Note [FPS on a cluster of
// blocks]).
//
// Note [FPS on registers in striped chunks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The register kernel (Note [FPS on registers with spatial skipping]) skips
// whole warps of 512 points. Late in a run the points whose running
// distance can still shrink lie in a small ball around the new centre, yet
// every warp whose box touches that ball updates all its points: at B = 32,
// N = 8192 -> 1024 on an H200 that is ~0.4 us of its 0.72 us per pick (the
// rest, ~0.3 us, is the fixed chain of a pick: barrier, shared memory, four
// warp reductions). A model of both layouts on uniform clouds (8192 points,
// 1024 picks) updates 4.5 warps = 2300 points per pick there, 16.5 chunks =
// 530 points here, at most 2.4 chunks in any one warp.
// One block of 512 threads per cloud; each thread holds k <= 16 points:
//  - the Morton-sorted points are dealt out striped: slot s of thread t is
//    sorted position s * 512 + t, so slot s of a warp (its 32 lanes) is a
//    chunk of 32 consecutive points on the curve: compact in space;
//  - chunks near one another on the curve are the same slot of consecutive
//    warps, so the few chunks near a centre are updated by different warps
//    at the same time rather than one after another by one warp;
//  - lane s of a warp keeps the bounding box and the largest running
//    distance (as a key) of the warp's chunk s. Each round every lane tests
//    its chunk at once (the exact box test of the register kernel), a
//    ballot gathers the chunks that fail, and the warp updates those slots
//    only (an unrolled loop of warp-uniform branches: the points stay in
//    registers); each updated chunk's largest key is one integer reduction;
//  - the warp's candidate follows from its chunks' keys: the largest by a
//    reduction, its lowest index from the chunks holding that key only.
// Distances use the rounded arithmetic of Note [FPS distance], so the picks
// equal the CPU kernel's.
//
// Note [FPS in rounds of independent picks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The fixed chain of a pick is paid once per barrier; late in a run the
// next few picks are far apart and do not disturb one another, so one
// barrier can decide several, exactly. Each warp publishes its candidate c
// (largest key, lowest index) and `rest`, the largest key among its other
// points. After the barrier every warp takes the candidates in order
// (largest key, then lowest index), c1, c2, ..., each from a warp not yet
// taken, and accepts the longest prefix in which each c_j
//  - keeps its running distance D_j under the centres accepted before it:
//    !(d(c_i, c_j) < D_j) in the rounded arithmetic of the update, and
//  - outranks every point left in the warps already taken: key(c_j) is
//    above their `rest` (strictly: an equal key might hold a lower index).
// Then c_j is the furthest point once c_1..c_{j-1} are sampled: its own
// distance is unchanged, every point of a warp not yet taken ranked below it
// before and distances only shrink, and the points left in taken warps are
// below it by the second condition. So the round's picks are those of
// sequential FPS, and the update that follows applies every accepted centre
// (a chunk is skipped only when no centre is near it). At most `round`
// (1, 2 or 4) picks per barrier; a model of the kernel (picks compared with
// sequential FPS on uniform, Gaussian, clumped, grid and repeated clouds)
// averages 1.9 picks per round with 2 and 3.1 with 4 on 8192 uniform or
// Gaussian points -> 1024, and ~1 on grids, whose ties the strict rule
// rejects.
//
// Note [FPS on a cluster of blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A block holds at most 8192 points in registers, and one block per cloud
// leaves most of the GPU idle when the batch is small. From sm_90 on, clouds
// of 8193 to 65536 points take a thread-block cluster of 2, 4 or 8 blocks
// per cloud: block r holds the points [r * share, (r + 1) * share) exactly
// as above, in the Morton order of its own share (its chunks stay compact;
// its share is spread over the cloud). Each round the block's warps give the
// block's candidate and rest as a warp's points give the warp's; warp 0
// writes them, with the candidate's coordinates (the other blocks do not
// hold them), to the block's shared memory; one cluster barrier; every warp
// of every block reads the cluster's entries through distributed shared
// memory and takes the round's picks by the rule above, the blocks being the
// units (a block gives at most one pick a round). A last cluster barrier
// keeps each block's entries alive until every block has read them. The
// model replays this as well: on 32768 uniform points -> 2048 with 4 blocks,
// picks equal sequential FPS, 1.7 picks per round with rounds of 2 and 2.1
// with 4, 1650 points updated per pick (the register kernel's whole warps:
// 8190).

#include <cooperative_groups.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "fps_on_chip_rounds.cuh"
#include "fps_striped.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::experimental {

namespace {

using namespace fps;  // fps_common.cuh, fps_on_chip.cuh, fps_on_chip_rounds.cuh, fps_striped.cuh

constexpr unsigned int kThreads = 512;
constexpr unsigned int kWarps = kThreads / kWarp;
constexpr std::int64_t kOnChipPoints = 16 * kThreads;  // per block
constexpr int kMaxCluster = 8;                         // portable cluster size

// kCluster = 1: one block per cloud, the points of the whole cloud. Else the
// block of rank r in a cluster of kCluster blocks per cloud holds the points
// [r * share, (r + 1) * share), share = ceil(n / kCluster) (Note [FPS on a
// cluster of blocks]); sm_90 and later.
template <int kSlots, int kRound, int kCluster>
__global__ void __launch_bounds__(kThreads)
    fps_striped_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint, int start,
                       std::int64_t* __restrict__ out) {
  static_assert(kSlots < static_cast<int>(kWarp), "one lane keeps each chunk of a warp");
  static_assert(kRound >= 1 && kRound <= static_cast<int>(kWarps), "picks per round");
  static_assert(kCluster >= 1 && kCluster <= static_cast<int>(kWarp), "one lane per block");
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ RoundCandidate slots[2][kWarps];
  __shared__ float scratch[kWarps];
  const int cloud_index = static_cast<int>(blockIdx.x) / kCluster;
  const int rank = static_cast<int>(blockIdx.x) % kCluster;
  const int share = (n + kCluster - 1) / kCluster;
  const int first = rank * share;                   // the block's first point
  const int count = max(0, min(share, n - first));  // and how many it holds
  const float* points = xyz + static_cast<std::int64_t>(cloud_index) * n * 3;
  std::int64_t* picks = out + static_cast<std::int64_t>(cloud_index) * npoint;
  int idx[kSlots];  // indices within the block's points
  const Cloud cloud =
      deal_cloud<kThreads, kSlots, true>(points + 3 * first, count, shared, scratch, idx);
  float px[kSlots], py[kSlots], pz[kSlots], dist[kSlots];
  point_registers(cloud, count, start - first, idx, px, py, pz, dist);

  const unsigned int lane = threadIdx.x % kWarp;
  // Lane s: the box of the warp's chunk s (lanes past the chunks, and chunks
  // of padding only, keep an empty box, which no centre is ever near).
  float chunk_low[3] = {INFINITY, INFINITY, INFINITY};
  float chunk_high[3] = {-INFINITY, -INFINITY, -INFINITY};
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    float box_low[3] = {INFINITY, INFINITY, INFINITY};
    float box_high[3] = {-INFINITY, -INFINITY, -INFINITY};
    if (idx[s] < count) {
      grow_box(box_low, box_high, {px[s], py[s], pz[s]});
    }
    warp_box(box_low, box_high);
    if (lane == static_cast<unsigned int>(s)) {
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        chunk_low[a] = box_low[a];
        chunk_high[a] = box_high[a];
      }
    }
  }

  if (threadIdx.x == 0 && rank == 0) {
    picks[0] = start;
  }
  // The centres of the last round (Note [FPS in rounds of independent picks]).
  float cx[kRound], cy[kRound], cz[kRound];
  cx[0] = points[3 * start];
  cy[0] = points[3 * start + 1];
  cz[0] = points[3 * start + 2];
  int centres = 1;
  RoundCandidate mine{0u, kNoIndex, 0u};
  unsigned int chunk_key = 0;                // lane s: chunk s's largest key
  float chunk_largest = INFINITY;            // ... and the running distance it stands for
  unsigned int stale = (1u << kSlots) - 1u;  // the chunks to recompute: all at first
  std::int64_t picked = 1;
  for (int round = 0; picked < npoint; ++round) {
    bool near = false;
#pragma unroll
    for (int m = 0; m < kRound; ++m) {
      if (m < centres) {
        near = near ||
               !(box_squared_distance(cx[m], cy[m], cz[m], chunk_low, chunk_high) >= chunk_largest);
      }
    }
    const unsigned int update = __ballot_sync(kFullMask, near) | stale;
    if (update != 0) {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if ((update >> s) & 1u) {
          float running = dist[s];
#pragma unroll
          for (int m = 0; m < kRound; ++m) {
            if (m < centres) {
              const float d = squared_distance(cx[m], cy[m], cz[m], px[s], py[s], pz[s]);
              running = d < running ? d : running;
            }
          }
          dist[s] = running;
          const unsigned int key = __reduce_max_sync(kFullMask, distance_key(running));
          if (lane == static_cast<unsigned int>(s)) {
            chunk_key = key;
          }
        }
      }
      chunk_largest = key_distance(chunk_key);
      mine.key = __reduce_max_sync(kFullMask, chunk_key);
      // Only the chunks holding the largest key can hold the candidate. (A
      // warp with nothing left to pick ends with key 0 and an index already
      // sampled or past the cloud: never a pick.)
      const unsigned int holders = __ballot_sync(
          kFullMask, lane < static_cast<unsigned int>(kSlots) && chunk_key == mine.key);
      unsigned int candidate = kNoIndex;
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if (((holders >> s) & 1u) && distance_key(dist[s]) == mine.key && idx[s] < count) {
          candidate = min(candidate, static_cast<unsigned int>(first + idx[s]));
        }
      }
      mine.index = __reduce_min_sync(kFullMask, candidate);
      if constexpr (kRound > 1) {
        // The largest key besides the candidate: the key itself if another
        // lane reaches it too, else the best of the other lanes' keys and the
        // candidate lane's second.
        unsigned int best, second;
        lane_top_two(dist, best, second);
        const bool reaches = best == mine.key;
        const unsigned int others = __reduce_max_sync(kFullMask, reaches ? second : best);
        mine.rest = __popc(__ballot_sync(kFullMask, reaches)) > 1 ? mine.key : others;
      }
      stale = 0;
    }

    // The round's units: the warps of the block (one barrier), or the blocks
    // of the cluster (a barrier, each block's entry, a cluster barrier). The
    // buffers alternate between rounds, as in block_pick.
    RoundCandidate* buffer = slots[round & 1];
    if (lane == 0) {
      buffer[threadIdx.x / kWarp] = mine;
    }
    __syncthreads();
    const RoundCandidate none{0u, kNoIndex, 0u};
    RoundCandidate unit = lane < kWarps ? buffer[lane] : none;
    float unit_x = 0.0f, unit_y = 0.0f, unit_z = 0.0f;  // kCluster > 1: the unit's point
    if constexpr (kCluster > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      __shared__ BlockEntry entries[2];
      if (threadIdx.x < kWarp) {  // warp 0 writes the block's entry
        const unsigned int key = __reduce_max_sync(kFullMask, unit.key);
        const unsigned int index =
            __reduce_min_sync(kFullMask, unit.key == key ? unit.index : kNoIndex);
        const unsigned int rest =
            __reduce_max_sync(kFullMask, unit.index == index ? unit.rest : unit.key);
        if (lane == 0) {
          const unsigned int local = index - static_cast<unsigned int>(first);
          const bool real = key > 0 && local < static_cast<unsigned int>(count);
          entries[round & 1] = {{key, index, rest},
                                real ? cloud.xs[local] : 0.0f,
                                real ? cloud.ys[local] : 0.0f,
                                real ? cloud.zs[local] : 0.0f};
        }
      }
      cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
      cluster.sync();
      BlockEntry entry{none, 0.0f, 0.0f, 0.0f};
      if (lane < static_cast<unsigned int>(kCluster)) {
        entry = *cluster.map_shared_rank(&entries[round & 1], lane);
      }
      unit = entry.candidate;
      unit_x = entry.x;
      unit_y = entry.y;
      unit_z = entry.z;
#else
      __trap();  // launch_cluster refuses code compiled for earlier architectures
#endif
    }
    const RoundOrder<kRound> order = take_in_order<kRound, (kCluster > 1)>(unit);
    // The coordinates of the j-th candidate: in the cloud (one block holds
    // it all), or from the entry of the block that holds it.
    auto place = [&](int j, float& x, float& y, float& z) {
      if constexpr (kCluster == 1) {
        const unsigned int at = order.picks[j] < static_cast<unsigned int>(n) ? order.picks[j] : 0u;
        x = cloud.xs[at];
        y = cloud.ys[at];
        z = cloud.zs[at];
      } else {
        x = __shfl_sync(kFullMask, unit_x, order.holders[j] & (kWarp - 1));
        y = __shfl_sync(kFullMask, unit_y, order.holders[j] & (kWarp - 1));
        z = __shfl_sync(kFullMask, unit_z, order.holders[j] & (kWarp - 1));
      }
    };
    // Accept the longest prefix whose picks follow one another exactly
    // (only the first `accepted` centres update distances).
    bool next_in_order[kRound];
#pragma unroll
    for (int j = 0; j < kRound; ++j) {
      place(j, cx[j], cy[j], cz[j]);
      next_in_order[j] = true;  // take_in_order's order is the rule's
    }
    const int accepted =
        picks_that_follow(order.keys, order.rests, next_in_order, cx, cy, cz, npoint - picked);
    if (threadIdx.x == 0 && rank == 0) {
#pragma unroll
      for (int j = 0; j < kRound; ++j) {
        if (j < accepted) {
          picks[picked + j] = order.picks[j];
        }
      }
    }
    // A warp gives at most one pick a round: the one that was its candidate.
    bool owner = false;
#pragma unroll
    for (int j = 0; j < kRound; ++j) {
      owner = owner || (j < accepted && order.picks[j] == mine.index);
    }
    if (owner) {
      unsigned int chunk = 0;  // the picked point's slot + 1 in its lane, else 0
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if (idx[s] < count && static_cast<unsigned int>(first + idx[s]) == mine.index) {
          dist[s] = -1.0f;
          chunk = s + 1;
        }
      }
      stale = 1u << (__reduce_max_sync(kFullMask, chunk) - 1);
    }
    centres = accepted;
    picked += accepted;
  }
  if constexpr (kCluster > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // No block leaves while another may still read its entries.
    cooperative_groups::this_cluster().sync();
#endif
  }
}

// The blocks per cloud the striped kernel uses for n points: one up to
// kOnChipPoints, else a cluster of 2, 4 or 8; 0 beyond 8 * kOnChipPoints.
// `requested` (1, 2, 4 or 8; 0: none) raises that, so that a small batch
// can spread each cloud over several SMs; fewer blocks than the cloud needs
// is an error.
int blocks_per_cloud(std::int64_t n, int requested) {
  int blocks = 1;
  while (blocks <= kMaxCluster && blocks * kOnChipPoints < n) {
    blocks *= 2;
  }
  if (blocks > kMaxCluster) {
    throw std::invalid_argument("furthest_point_sample: the striped kernel takes at most " +
                                std::to_string(kMaxCluster * kOnChipPoints) + " points, got " +
                                std::to_string(n));
  }
  if (requested != 0 && requested != 1 && requested != 2 && requested != 4 &&
      requested != kMaxCluster) {
    throw std::invalid_argument(
        "furthest_point_sample: the striped kernel runs 1, 2, 4 or 8 blocks per cloud, not " +
        std::to_string(requested));
  }
  if (requested != 0 && requested < blocks) {
    throw std::invalid_argument("furthest_point_sample: " + std::to_string(requested) +
                                " block(s) of the striped kernel hold at most " +
                                std::to_string(requested * kOnChipPoints) + " points, got " +
                                std::to_string(n));
  }
  return requested > blocks ? requested : blocks;
}

// Fills `config` (and the `cluster` attribute it points to) to launch the
// kernel for `batch` clouds of n points on clusters of kCluster blocks, and
// says what stops this GPU from running it: empty when nothing does.
template <int kSlots, int kRound, int kCluster>
std::string prepare_cluster(std::int64_t batch, std::int64_t n, cudaStream_t stream,
                            cudaLaunchConfig_t& config, cudaLaunchAttribute& cluster) {
  const auto kernel = fps_striped_kernel<kSlots, kRound, kCluster>;
  // The device may be sm_90 while this build holds only older code for it
  // (PTX of an earlier architecture compiled on the fly), in which the
  // kernel has no cluster path: its __CUDA_ARCH__ is that PTX's version.
  cudaFuncAttributes attributes{};
  DTRAIN_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  if (attributes.ptxVersion < 90) {
    return "furthest_point_sample: the striped kernel for more than " +
           std::to_string(kOnChipPoints) +
           " points needs thread-block clusters, code for compute_90 or later, and this build "
           "runs code for compute_" +
           std::to_string(attributes.ptxVersion) + " here (see DTRAIN_CUDA_ARCHITECTURES)";
  }
  const std::int64_t share = (n + kCluster - 1) / kCluster;
  const std::size_t bytes = on_chip_shared_bytes<kThreads, kSlots>(share);
  DTRAIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
  config = cudaLaunchConfig_t{};
  config.gridDim = dim3(static_cast<unsigned int>(batch * kCluster));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = bytes;
  config.stream = stream;
  cluster = cudaLaunchAttribute{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kCluster;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  // A GPU partition with few SMs (MIG) may hold no cluster of this size.
  int clusters = 0;
  DTRAIN_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  if (clusters < 1) {
    return "furthest_point_sample: this GPU cannot run a cluster of " + std::to_string(kCluster) +
           " blocks of " + std::to_string(bytes) + " bytes of shared memory";
  }
  return "";
}

template <int kSlots, int kRound, int kCluster>
void launch_cluster(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                    std::int64_t start, std::int64_t* out, cudaStream_t stream) {
  check_grid_size(batch * kCluster);
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute cluster{};
  const std::string problem =
      prepare_cluster<kSlots, kRound, kCluster>(batch, n, stream, config, cluster);
  if (!problem.empty()) {
    throw std::runtime_error(problem);
  }
  DTRAIN_CUDA_CHECK(cudaLaunchKernelEx(&config, fps_striped_kernel<kSlots, kRound, kCluster>, xyz,
                                       static_cast<int>(n), npoint, static_cast<int>(start), out));
}

// Calls visit(slots, cluster) with the points per thread and the blocks per
// cloud (as integral constants) of clouds of n points on `blocks` blocks
// (2, 4 or 8: blocks_per_cloud above one).
template <typename Visit>
decltype(auto) with_cluster(int blocks, std::int64_t n, Visit&& visit) {
  auto on_shares = [&](auto cluster) -> decltype(auto) {
    constexpr int kCluster = decltype(cluster)::value;
    return with_points_per_thread<kThreads>(
        (n + kCluster - 1) / kCluster,
        [&](auto slots) -> decltype(auto) { return visit(slots, cluster); });
  };
  switch (blocks) {
    case 2:
      return on_shares(std::integral_constant<int, 2>{});
    case 4:
      return on_shares(std::integral_constant<int, 4>{});
    default:
      return on_shares(std::integral_constant<int, kMaxCluster>{});
  }
}

template <int kRound>
void launch_rounds(int cluster, const float* xyz, std::int64_t batch, std::int64_t n,
                   std::int64_t npoint, std::int64_t start, std::int64_t* out,
                   cudaStream_t stream) {
  const int blocks = blocks_per_cloud(n, cluster);
  if (blocks == 1) {
    return with_points_per_thread<kThreads>(n, [&](auto per_thread) {
      constexpr int kSlots = decltype(per_thread)::value;
      launch_on_chip<kThreads, kSlots>(fps_striped_kernel<kSlots, kRound, 1>, xyz, batch, n, npoint,
                                       start, out, stream);
    });
  }
  with_cluster(blocks, n, [&](auto slots, auto cluster_size) {
    launch_cluster<decltype(slots)::value, kRound, decltype(cluster_size)::value>(
        xyz, batch, n, npoint, start, out, stream);
  });
}

// Calls visit(std::integral_constant<int, round>{}) for a round of 1, 2 or
// 4 picks; any other throws std::invalid_argument.
template <typename Visit>
decltype(auto) with_round(int round, Visit&& visit) {
  switch (round) {
    case 1:
      return visit(std::integral_constant<int, 1>{});
    case 2:
      return visit(std::integral_constant<int, 2>{});
    case 4:
      return visit(std::integral_constant<int, 4>{});
    default:
      throw std::invalid_argument(
          "furthest_point_sample: the striped kernel takes 1, 2 or 4 picks per round, not " +
          std::to_string(round));
  }
}

}  // namespace

std::int64_t fps_striped_max_points(int compute_major) {
  return compute_major >= 9 ? kMaxCluster * kOnChipPoints : kOnChipPoints;
}

std::size_t fps_striped_shared_bytes(std::int64_t n, int cluster) {
  const int blocks = blocks_per_cloud(n, cluster);
  const std::int64_t share = (n + blocks - 1) / blocks;
  return with_points_per_thread<kThreads>(share, [&](auto per_thread) {
    return on_chip_shared_bytes<kThreads, decltype(per_thread)::value>(share);
  });
}

void launch_fps_striped(int round, int cluster, const float* xyz, std::int64_t batch,
                        std::int64_t n, std::int64_t npoint, std::int64_t start, std::int64_t* out,
                        cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  with_round(round, [&](auto picks) {
    launch_rounds<decltype(picks)::value>(cluster, xyz, batch, n, npoint, start, out, stream);
  });
}

}  // namespace dtrain::kernels::cuda::experimental

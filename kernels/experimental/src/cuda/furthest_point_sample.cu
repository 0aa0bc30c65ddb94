// The experimental FPS settings (launchers.h): each checked against the
// cloud size and this GPU, then run; kMeasured times the on-chip settings
// (Note [Choosing the CUDA FPS kernel by timing it] in
// furthest_point_sample_fastest.cu).

#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "launchers.h"

namespace dtrain::kernels::cuda::experimental {

namespace {

// The most points one block of the register and leader kernels holds.
constexpr std::int64_t kOnChipPoints = 8192;

// The settings of the kernels that hold a cloud of up to 8192 points on
// chip, the register kernel's first (it runs before a measurement, is the
// reference every other one's picks are compared with, and wins ties). The
// leader's are those whose shared memory fits for the largest cloud of n's
// kind (n rounded up to a power of two), so that one kind has one list.
std::vector<FpsCandidate> on_chip_candidates(std::int64_t n, std::int64_t shared_limit) {
  std::vector<FpsCandidate> candidates = {
      {{Variant::kRegisters, Lane::kPass, 1}, "registers"},
      {{Variant::kRegisters, Lane::kTree, 1}, "registers_lane_tree"},
      {{Variant::kRegisters, Lane::kTree, 2}, "registers_round2_lane_tree"},
      {{Variant::kRegisters, Lane::kTree, 4}, "registers_round4_lane_tree"},
  };
  const std::int64_t largest = power_of_two_at_least(n);
  const FpsCandidate leaders[] = {
      {{Variant::kLeader, Lane::kTree, 1, 1024}, "leader_1024"},
      {{Variant::kLeader, Lane::kTree, 1, 512}, "leader_512"},
      {{Variant::kLeader, Lane::kTree, 2, 512}, "leader_512_round2"},
      {{Variant::kLeader, Lane::kTree, 4, 512}, "leader_512_round4"},
  };
  for (const FpsCandidate& leader : leaders) {
    if (static_cast<std::int64_t>(fps_leader_shared_bytes(largest, leader.setting.threads)) <=
        shared_limit) {
      candidates.push_back(leader);
    }
  }
  return candidates;
}

[[noreturn]] void refuse(const char* variant, const std::string& limit, std::int64_t n) {
  throw std::invalid_argument(std::string("furthest_point_sample: FpsVariant::") + variant +
                              " takes at most " + limit + " (and their shared memory), got " +
                              std::to_string(n));
}

// Throws std::invalid_argument when `setting` cannot take clouds of n
// points on this GPU.
void check_setting(const Setting& setting, std::int64_t n) {
  const std::int64_t limit = dynamic_shared_limit();
  const std::string on_chip = std::to_string(kOnChipPoints) + " points";
  switch (setting.variant) {
    case Variant::kRegisters:
      if (n > kOnChipPoints || static_cast<std::int64_t>(fps_registers_shared_bytes(n)) > limit) {
        refuse("kRegisters", on_chip, n);
      }
      return;
    case Variant::kLeader:
      if (n > kOnChipPoints ||
          static_cast<std::int64_t>(fps_leader_shared_bytes(n, setting.threads)) > limit) {
        refuse("kLeader", on_chip, n);
      }
      return;
    case Variant::kStriped: {
      // Its shared memory counted only within its range: the count throws
      // for a cloud that the requested cluster cannot hold.
      const std::int64_t most =
          fps_striped_max_points(device_attribute(cudaDevAttrComputeCapabilityMajor));
      if (n > most ||
          static_cast<std::int64_t>(fps_striped_shared_bytes(n, setting.cluster)) > limit) {
        refuse("kStriped", std::to_string(most) + " points on this GPU", n);
      }
      return;
    }
    case Variant::kMeasured:
      if (n > kOnChipPoints || static_cast<std::int64_t>(fps_registers_shared_bytes(n)) > limit) {
        refuse("kMeasured", on_chip, n);
      }
      return;
  }
}

}  // namespace

void launch_setting(const Setting& setting, const float* xyz, std::int64_t batch, std::int64_t n,
                    std::int64_t npoint, std::int64_t start, std::int64_t* out,
                    cudaStream_t stream) {
  switch (setting.variant) {
    case Variant::kRegisters:
      return launch_fps_registers(setting.lane, setting.round, xyz, batch, n, npoint, start, out,
                                  stream);
    case Variant::kLeader:
      return launch_fps_leader(setting.threads, setting.round, xyz, batch, n, npoint, start, out,
                               stream);
    case Variant::kStriped:
      return launch_fps_striped(setting.round, setting.cluster, xyz, batch, n, npoint, start, out,
                                stream);
    case Variant::kMeasured:
      break;
  }
  throw std::invalid_argument("furthest_point_sample: kMeasured chooses a kernel, it is none");
}

void launch_furthest_point_sample(const Setting& setting, const float* xyz, std::int64_t batch,
                                  std::int64_t n, std::int64_t npoint, std::int64_t start,
                                  std::int64_t* out, cudaStream_t stream) {
  check_setting(setting, n);
  if (batch == 0) {
    return;
  }
  if (setting.variant == Variant::kMeasured) {
    return launch_fps_fastest(on_chip_candidates(n, dynamic_shared_limit()), xyz, batch, n, npoint,
                              start, out, stream);
  }
  launch_setting(setting, xyz, batch, n, npoint, start, out, stream);
}

}  // namespace dtrain::kernels::cuda::experimental

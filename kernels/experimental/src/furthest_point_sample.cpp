// Tensors and ExperimentalFps -> the experimental CUDA FPS launchers
// (src/cuda/launchers.h), on the current CUDA stream.
#include "dtrain/kernels/experimental/furthest_point_sample.h"

#include <c10/util/Exception.h>

#include "dtrain/config.h"
#include "point_checks.h"

#if DTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>

#include "cuda/launchers.h"
#endif

namespace dtrain::kernels::experimental {

namespace {

constexpr const char* kOp = "experimental furthest_point_sample";

bool is_round(int round) {
  return round == 1 || round == 2 || round == 4;
}

// The settings that make no sense whatever the clouds: checked here, with
// no GPU, before any kernel runs.
void check_setting(const ExperimentalFps& fps) {
  switch (fps.variant()) {
    case FpsVariant::kRegisters:
      TORCH_CHECK(is_round(fps.round()), kOp, ": the register kernel takes rounds of 1, 2 or 4 ",
                  "picks, got ", fps.round());
      TORCH_CHECK(fps.round() == 1 || fps.lane() == FpsLane::kTree, kOp, ": rounds of ",
                  fps.round(), " picks need FpsLane::kTree");
      return;
    case FpsVariant::kLeader:
      TORCH_CHECK(fps.threads() == 512 || fps.threads() == 1024, kOp,
                  ": the leader kernel runs 512 or 1024 threads a block, got ", fps.threads());
      TORCH_CHECK(is_round(fps.round()) && (fps.threads() == 512 || fps.round() == 1), kOp,
                  ": the leader kernel takes rounds of 1 pick on 1024 threads, of 1, 2 or 4 on ",
                  "512; got rounds of ", fps.round(), " on ", fps.threads());
      return;
    case FpsVariant::kStriped:
      TORCH_CHECK(is_round(fps.round()), kOp, ": the striped kernel takes rounds of 1, 2 or 4 ",
                  "picks, got ", fps.round());
      TORCH_CHECK(fps.cluster() == 0 || fps.cluster() == 1 || fps.cluster() == 2 ||
                      fps.cluster() == 4 || fps.cluster() == 8,
                  kOp, ": the striped kernel runs 1, 2, 4 or 8 blocks per cloud (0: the fewest), ",
                  "got ", fps.cluster());
      return;
    case FpsVariant::kMeasured:
      return;
  }
  TORCH_CHECK(false, kOp, ": unknown FpsVariant ", static_cast<int>(fps.variant()));
}

}  // namespace

#if DTRAIN_WITH_CUDA

// The launchers' mirror of FpsVariant, position for position.
static_assert(static_cast<int>(cuda::experimental::Variant::kRegisters) ==
                  static_cast<int>(FpsVariant::kRegisters) &&
              static_cast<int>(cuda::experimental::Variant::kLeader) ==
                  static_cast<int>(FpsVariant::kLeader) &&
              static_cast<int>(cuda::experimental::Variant::kStriped) ==
                  static_cast<int>(FpsVariant::kStriped) &&
              static_cast<int>(cuda::experimental::Variant::kMeasured) ==
                  static_cast<int>(FpsVariant::kMeasured));

at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, const ExperimentalFps& fps,
                                 int64_t start) {
  check_setting(fps);
  const at::Tensor points = detail::checked_sampling_points(kOp, xyz, npoint, start);
  TORCH_CHECK(points.is_cuda(), kOp, ": the experimental kernels run on CUDA tensors, got ",
              points.device());
  const c10::cuda::CUDAGuard device_guard(points.device());
  at::Tensor out = at::empty({points.size(0), npoint}, points.options().dtype(at::kLong));
  cuda::experimental::Setting setting;
  setting.variant = static_cast<cuda::experimental::Variant>(fps.variant());
  setting.lane = fps.lane() == FpsLane::kTree ? cuda::experimental::Lane::kTree
                                              : cuda::experimental::Lane::kPass;
  setting.round = fps.round();
  setting.threads = fps.threads();
  setting.cluster = fps.cluster();
  cuda::experimental::launch_furthest_point_sample(
      setting, points.const_data_ptr<float>(), points.size(0), points.size(1), npoint, start,
      out.mutable_data_ptr<int64_t>(), at::cuda::getCurrentCUDAStream());
  return out;
}

std::vector<FpsMeasurement> fps_measurements() {
  std::vector<FpsMeasurement> kinds;
  for (const cuda::experimental::KindMeasured& kind :
       cuda::experimental::fps_fastest_measurements()) {
    FpsMeasurement measurement{};
    measurement.device = kind.device;
    measurement.batch = kind.batch;
    measurement.points = kind.n;
    measurement.npoint = kind.npoint;
    measurement.chosen = kind.choice.chosen;
    for (std::size_t i = 0; i < kind.choice.names.size(); ++i) {
      measurement.settings.push_back(
          {kind.choice.names[i], kind.choice.seconds[i], kind.choice.differs[i]});
    }
    kinds.push_back(std::move(measurement));
  }
  return kinds;
}

#else

at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, const ExperimentalFps& fps,
                                 int64_t start) {
  check_setting(fps);
  detail::checked_sampling_points(kOp, xyz, npoint, start);
  TORCH_CHECK(false, kOp, ": this dtrain was built without CUDA (DTRAIN_CUDA=OFF or no nvcc at ",
              "build time), and the experimental kernels run on CUDA tensors only");
}

std::vector<FpsMeasurement> fps_measurements() {
  return {};  // nothing measured: no CUDA
}

#endif

}  // namespace dtrain::kernels::experimental

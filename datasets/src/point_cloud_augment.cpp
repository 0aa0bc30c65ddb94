#include "dtrain/datasets/point_cloud_augment.h"

#include <cmath>
#include <limits>
#include <numbers>

#include <ATen/ATen.h>
#include <c10/util/irange.h>

#include "dtrain/util/errors.h"

namespace dtrain::datasets {

namespace {

void check_options(const PointCloudAugmentOptions& o) {
  DTRAIN_CHECK(std::isfinite(o.scale_min()) && o.scale_min() > 0 &&
                   o.scale_min() <= o.scale_max() && std::isfinite(o.scale_max()),
               "augment_point_clouds: need 0 < scale_min <= scale_max, got scale_min ",
               o.scale_min(), " and scale_max ", o.scale_max());
  DTRAIN_CHECK(std::isfinite(o.shift()) && o.shift() >= 0,
               "augment_point_clouds: shift must be >= 0, got ", o.shift());
  DTRAIN_CHECK(std::isfinite(o.jitter_sigma()) && o.jitter_sigma() >= 0,
               "augment_point_clouds: jitter_sigma must be >= 0, got ", o.jitter_sigma());
  DTRAIN_CHECK(std::isfinite(o.jitter_clip()) && o.jitter_clip() >= 0,
               "augment_point_clouds: jitter_clip must be >= 0, got ", o.jitter_clip());
  DTRAIN_CHECK(o.up_axis() >= 0 && o.up_axis() <= 2,
               "augment_point_clouds: up_axis must be 0, 1 or 2, got ", o.up_axis());
  DTRAIN_CHECK(o.dropout_max() >= 0 && o.dropout_max() < 1,
               "augment_point_clouds: dropout_max must be in [0, 1), got ", o.dropout_max());
}

// The largest finite value of the points' type; the draws below are made in
// it, and LibTorch refuses bounds outside it.
double largest_finite(at::ScalarType type) {
  switch (type) {
    case at::kDouble:
      return std::numeric_limits<double>::max();
    case at::kFloat:
      return std::numeric_limits<float>::max();
    case at::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::max());
    case at::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
    default:  // float8: LibTorch does not draw in these types at all
      return std::numeric_limits<double>::max();
  }
}

// Every option is a value, or (shift) half a width, of the points' type.
void check_options_fit(const PointCloudAugmentOptions& o, at::ScalarType type) {
  const double largest = largest_finite(type);
  auto check = [&](const char* name, double value, double limit) {
    DTRAIN_CHECK(value <= limit, "augment_point_clouds: ", name, " must be <= ", limit, " for ",
                 type, " points, got ", value);
  };
  check("scale_min", o.scale_min(), largest);
  check("scale_max", o.scale_max(), largest);
  // The offset is uniform in [-shift, shift]: its width 2 shift must fit too.
  check("shift", o.shift(), largest / 2);
  check("jitter_sigma", o.jitter_sigma(), largest);
  check("jitter_clip", o.jitter_clip(), largest);
}

// (B, 3, 3) rotations by a uniform angle about `axis`.
at::Tensor rotations_about(int64_t axis, int64_t batch, const at::Generator& gen) {
  const at::Tensor angle = at::empty({batch}, at::kDouble).uniform_(0, 2 * std::numbers::pi, gen);
  const at::Tensor c = angle.cos();
  const at::Tensor s = angle.sin();
  at::Tensor r = at::zeros({batch, 3, 3}, at::kDouble);
  // The plane orthogonal to the up axis, in right-handed order.
  const int64_t a = (axis + 1) % 3;
  const int64_t b = (axis + 2) % 3;
  r.select(1, axis).select(1, axis).fill_(1);
  r.select(1, a).select(1, a).copy_(c);
  r.select(1, a).select(1, b).copy_(-s);
  r.select(1, b).select(1, a).copy_(s);
  r.select(1, b).select(1, b).copy_(c);
  return r;
}

}  // namespace

at::Tensor augment_point_clouds(const at::Tensor& points, const PointCloudAugmentOptions& options,
                                std::optional<at::Generator> generator) {
  DTRAIN_CHECK(points.dim() == 3 && points.size(2) >= 3 && points.is_floating_point(),
               "augment_point_clouds: points must be a floating (B, N, C >= 3) tensor, got ",
               points.scalar_type(), " of shape ", points.sizes());
  DTRAIN_CHECK(points.device().is_cpu(), "augment_point_clouds: points must be on the CPU, got ",
               points.device());
  check_options(options);
  check_options_fit(options, points.scalar_type());
  if (points.numel() == 0) {
    // No cloud (B = 0) or clouds of no point (N = 0): nothing to move, and
    // nothing is drawn.
    return points.clone();
  }
  const at::Generator gen = generator.value_or(at::detail::getDefaultCPUGenerator());
  const int64_t batch = points.size(0);
  const int64_t n = points.size(1);
  at::Tensor out = points.clone();
  at::Tensor xyz = out.narrow(2, 0, 3);  // a view: the steps below change `out`
  const bool has_normals = points.size(2) >= 6;

  if (options.shuffle_points()) {
    // One permutation per cloud: the argsort of uniform draws.
    const at::Tensor order =
        at::empty({batch, n}, at::kDouble).uniform_(0, 1, gen).argsort(/*dim=*/int64_t{1});
    out = out.gather(1, order.unsqueeze(-1).expand({batch, n, out.size(2)}));
    xyz = out.narrow(2, 0, 3);
  }
  if (options.rotate_up()) {
    // Points are rows: p' = p R^T.
    const at::Tensor rotation_t =
        rotations_about(options.up_axis(), batch, gen).transpose(1, 2).to(points.scalar_type());
    xyz.copy_(at::bmm(xyz, rotation_t));
    if (has_normals) {
      at::Tensor normals = out.narrow(2, 3, 3);
      normals.copy_(at::bmm(normals, rotation_t));
    }
  }
  const auto scale = at::empty({batch, 1, 1}, points.options())
                         .uniform_(options.scale_min(), options.scale_max(), gen);
  xyz.mul_(scale);
  if (options.shift() > 0) {
    xyz.add_(at::empty({batch, 1, 3}, points.options())
                 .uniform_(-options.shift(), options.shift(), gen));
  }
  if (options.jitter_sigma() > 0) {
    xyz.add_(at::empty({batch, n, 3}, points.options())
                 .normal_(0, options.jitter_sigma(), gen)
                 .clamp_(-options.jitter_clip(), options.jitter_clip()));
  }
  if (options.dropout_max() > 0) {
    const at::Tensor ratio =
        at::empty({batch, 1}, at::kDouble).uniform_(0, options.dropout_max(), gen);
    const at::Tensor dropped = at::empty({batch, n}, at::kDouble).uniform_(0, 1, gen) < ratio;
    // Point 0 keeps its place, so the replacement is a real point of the cloud.
    dropped.select(1, 0).fill_(false);
    out.copy_(at::where(dropped.unsqueeze(-1), out.narrow(1, 0, 1), out));
  }
  return out;
}

}  // namespace dtrain::datasets

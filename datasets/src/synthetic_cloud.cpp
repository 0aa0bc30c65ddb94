#include "synthetic_cloud.h"

#include <cmath>
#include <vector>

#include "portable_math.h"
#include "portable_random.h"

namespace dtrain::datasets {

void make_cloud(ShapeKind kind, int64_t num_points, uint64_t seed, float* points, float* normals,
                int64_t* parts) {
  portable::Random random(seed);
  const Vec3 scale{random.uniform(kMinAxisScale, kMaxAxisScale),
                   random.uniform(kMinAxisScale, kMaxAxisScale),
                   random.uniform(kMinAxisScale, kMaxAxisScale)};
  const auto turn = portable::sin_cos(2.0 * portable::kPi * random.uniform());
  // About y: (x, z) -> (x cos + z sin, -x sin + z cos), PointNet's rotate_point_cloud.
  auto rotate = [&](const Vec3& v) -> Vec3 {
    return {v[0] * turn.cos + v[2] * turn.sin, v[1], -v[0] * turn.sin + v[2] * turn.cos};
  };

  std::vector<Vec3> cloud(static_cast<std::size_t>(num_points));
  Vec3 sum{0.0, 0.0, 0.0};
  for (int64_t i = 0; i < num_points; ++i) {
    const SurfacePoint s = sample_surface(kind, random);
    parts[i] = s.part;
    Vec3 p = rotate({s.point[0] * scale[0], s.point[1] * scale[1], s.point[2] * scale[2]});
    for (int d = 0; d < 3; ++d) {
      p[d] += kJitter * random.normal();
      sum[d] += p[d];
    }
    cloud[static_cast<std::size_t>(i)] = p;

    // A surface scaled by S has normals along S^-1 n.
    Vec3 n = rotate({s.normal[0] / scale[0], s.normal[1] / scale[1], s.normal[2] / scale[2]});
    const double length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int d = 0; d < 3; ++d) {
      normals[3 * i + d] = static_cast<float>(n[d] / length);
    }
  }

  const Vec3 centroid{sum[0] / num_points, sum[1] / num_points, sum[2] / num_points};
  double farthest = 0.0;
  for (Vec3& p : cloud) {
    for (int d = 0; d < 3; ++d) {
      p[d] -= centroid[d];
    }
    farthest = std::fmax(farthest, std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]));
  }
  // A one-point cloud is all centroid: it stays at the origin.
  const double radius = farthest > 0.0 ? farthest : 1.0;
  for (int64_t i = 0; i < num_points; ++i) {
    for (int d = 0; d < 3; ++d) {
      points[3 * i + d] = static_cast<float>(cloud[static_cast<std::size_t>(i)][d] / radius);
    }
  }
}

}  // namespace dtrain::datasets

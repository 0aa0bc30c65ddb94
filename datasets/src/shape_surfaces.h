// The solids of the synthetic shapes and uniform sampling of their surfaces.
//
// Each solid is centred near the origin with y up and spans about [-1, 1]
// on its longest axis. sample_surface draws a point uniformly by area over
// the whole surface: a face or part is chosen with probability
// proportional to its area, then a point uniformly on it (curved parts by
// an area-preserving map, or by rejection where there is none, as for the
// torus and the ellipsoid). Pure arithmetic in double, deterministic for a
// given Random (portable_math.h).
#pragma once

#include <array>
#include <string>

#include "portable_random.h"

namespace dtrain::datasets {

// In label order: a dataset of k classes holds the first k.
enum class ShapeKind {
  kSphere,
  kCube,
  kCylinder,
  kCone,
  kTorus,
  kSquarePyramid,
  kDisk,
  kCapsule,
  kEllipsoid,
  kOctahedron,
  kTetrahedron,
  kHexagonalPrism,
  kDome,
};
constexpr int kNumShapeKinds = static_cast<int>(ShapeKind::kDome) + 1;

// "sphere", "square_pyramid", ...: lower case with underscores like ModelNet's names.
const char* shape_name(ShapeKind kind);

using Vec3 = std::array<double, 3>;

struct SurfacePoint {
  Vec3 point;
  Vec3 normal;  // outward, unit length
};

SurfacePoint sample_surface(ShapeKind kind, portable::Random& random);

}  // namespace dtrain::datasets

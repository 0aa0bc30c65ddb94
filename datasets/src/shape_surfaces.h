// The solids of the synthetic shapes and uniform sampling of their surfaces.
//
// Each solid is centred near the origin with y up and spans about [-1, 1]
// on its longest axis. sample_surface draws a point uniformly by area over
// the whole surface: a face or part is chosen with probability
// proportional to its area, then a point uniformly on it (curved parts by
// an area-preserving map, or by rejection where there is none, as for the
// torus and the ellipsoid). Pure arithmetic in double, deterministic for a
// given Random (portable_math.h).
//
// Every point also says which part of its solid it lies on (the top, the
// sides, the upper half, ...; shape_part_names), for part segmentation.
// Parts follow the faces the sampler chooses or the side of y = 0 a point
// falls on, never a random draw of their own: labelling takes nothing from
// the random stream, so the points are the same with or without it.
#pragma once

#include <array>
#include <string>
#include <vector>

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
  Vec3 normal;   // outward, unit length
  int part = 0;  // index into shape_part_names(kind)
};

// The parts of each kind of solid, at least two each: "top", "sides", ...
// Every part is told apart by where it lies with y up (the synthetic
// shapes turn only about y), so a network can learn them.
const std::vector<std::string>& shape_part_names(ShapeKind kind);

SurfacePoint sample_surface(ShapeKind kind, portable::Random& random);

}  // namespace dtrain::datasets

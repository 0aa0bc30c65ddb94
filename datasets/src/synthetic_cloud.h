// One synthetic cloud: surface samples of a solid (shape_surfaces.h), then
// the augmentation and normalisation that make it look like a ModelNet
// cloud. Pure arithmetic in double, stored as float32; deterministic for a
// given seed on every machine (portable_math.h).
#pragma once

#include <cstdint>

#include "shape_surfaces.h"

namespace dtrain::datasets {

// Each axis is scaled by a factor uniform in [kMinAxisScale, kMaxAxisScale].
constexpr double kMinAxisScale = 0.8;
constexpr double kMaxAxisScale = 1.25;
// Standard deviation of the Gaussian jitter added to each coordinate,
// before normalisation (the solids span about 2).
constexpr double kJitter = 0.01;

// Writes num_points points and their unit normals, x y z each, into
// points[3 * num_points] and normals[3 * num_points], and each point's part
// of the solid (an index into shape_part_names(kind)) into
// parts[num_points]. In order: a random
// scale of each axis, a random rotation about y, jitter of the points,
// then the cloud's centroid moved to the origin and its farthest point to
// distance 1 (ModelNet's normalisation). Normals follow the scaling (by its
// inverse transpose) and the rotation, and are not jittered.
void make_cloud(ShapeKind kind, int64_t num_points, uint64_t seed, float* points, float* normals,
                int64_t* parts);

}  // namespace dtrain::datasets

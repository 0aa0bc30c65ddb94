// Furthest point sampling of one cloud on one thread, with the cloud cut into
// spatial chunks that a pick skips when it cannot change them (Note [FPS in
// spatial chunks on the CPU]). Same picks as the plain loop.
#pragma once

#include <cstdint>

namespace dtrain::kernels::detail {

// xyz: n points (x, y, z rows), n < 2^31; writes npoint indices to out.
// Returns false, writing nothing, when a coordinate is infinite or NaN: the
// caller then takes the plain loop.
bool sample_one_spatial(const float* xyz, int64_t n, int64_t npoint, int64_t start, int64_t* out);

}  // namespace dtrain::kernels::detail

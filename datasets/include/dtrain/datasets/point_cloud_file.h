// One point cloud from a file a user has, for prediction:
//   - PLY (ascii, binary_little_endian or binary_big_endian) whose first
//     element is `vertex` with properties x, y, z (any numeric type), and
//     nx, ny, nz where present; a strict reader of our own (no PLY library
//     is among dtrain's dependencies), which refuses what it does not read
//     rather than guessing;
//   - text: one point a line, x y z [nx ny nz ...] separated by spaces,
//     tabs or commas (ModelNet40's modelnet40_normal_resampled .txt files);
//     empty lines and lines starting with '#' are skipped.
// A file whose first line is "ply" is read as PLY, any other as text.
//
//   at::Tensor cloud = dtrain::datasets::read_point_cloud_file("chair.ply");  // (P, 3) or (P, 6)
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

namespace dtrain::datasets {

// (P, 3) float32 xyz, or (P, 6) with the normals after them when the file
// has them. Throws dtrain::IOError naming the file and what is wrong: it
// cannot be opened, a broken PLY header, a text line of fewer than 3
// columns or with something that is not a number, no points, a coordinate
// that is not finite (NaN, inf).
at::Tensor read_point_cloud_file(const std::string& path);

// The same readers, for a file already known to be one or the other.
at::Tensor read_ply_cloud(const std::string& path);
at::Tensor read_text_cloud(const std::string& path);

}  // namespace dtrain::datasets

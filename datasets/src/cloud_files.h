// What the readers of the published point-cloud HDF5 layouts (ModelNet40,
// ShapeNet-Part) share: the files a list names, and each file's clouds and
// per-cloud labels with their shape checks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "h5_file.h"

namespace dtrain::datasets {

// The .h5 files the list `root / list_name` names, resolved: a line as
// given (absolute, or relative to the root), else by its file name in the
// root (the published lists hold paths relative to PointNet's checkout, such
// as "data/modelnet40_ply_hdf5_2048/ply_data_train0.h5"). Throws
// dtrain::IOError naming the list and the line when a file is missing, or
// when the list is missing, or empty unless `may_be_empty` (an optional
// split); `what` says what the list is for.
std::vector<std::string> listed_files(const std::filesystem::path& root,
                                      const std::string& list_name, const char* what,
                                      bool may_be_empty = false);

// One file's 'data' (N, P, 3) float32, cut to its first `num_points` points
// (0: all), and 'label' ((N,) or (N, 1), any integer type) as (N,) int64.
struct CloudsAndLabels {
  int64_t points_per_cloud = 0;  // P, before num_points takes the first few
  at::Tensor points;             // (N, num_points or P, 3)
  at::Tensor labels;             // (N,)
};
CloudsAndLabels read_clouds_and_labels(const H5File& file, const std::string& path,
                                       int64_t num_points);

// Throws dtrain::IOError unless every value of `labels` lies in [0, count):
// "'<path>' holds label 4, but '<source>' names 4 classes (0 to 3)"
// for noun "label", counted "classes".
void check_label_range(const at::Tensor& labels, int64_t count, const std::string& path,
                       const std::string& noun, const std::string& counted,
                       const std::string& source);

}  // namespace dtrain::datasets

// ShapeNet-Part in the HDF5 layout PointNet and PointNet++ publish
// (shapenet_part_seg_hdf5_data, "hdf5_data"): 16 object categories, 50
// part labels, 2048 points per cloud.
//
// The layout: one directory holding
//   train_hdf5_file_list.txt, val_hdf5_file_list.txt, test_hdf5_file_list.txt
//                              one .h5 file a line (looked up by file name
//                              in the directory when the path is not there);
//                              the validation list may be empty
//   all_object_categories.txt  one category a line, "Airplane\t02691156":
//                              label i is line i (the name is the first word)
//   *.h5                       'data' float32 (n, P, 3), 'label' (n, 1) the
//                              category, 'pid' (n, P) every point's part
//
//   auto train = dtrain::datasets::load_shapenet_part_h5(
//       dtrain::datasets::Split::kTrain,
//       dtrain::datasets::ShapeNetPartH5Options().root("hdf5_data").num_points(2048));
//   train.points      // (14007, 2048, 3) float32 (training and validation files)
//   train.categories  // (14007,) int64 in [0, 16)
//   train.parts       // (14007, 2048) int64 in [0, 50)
//
// Errors as load_modelnet_h5's (point_clouds.h): dtrain::IOError naming the
// directory or file and what was wrong; dtrain::Error without HDF5.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include "dtrain/datasets/split.h"

namespace dtrain::datasets {

// Point clouds with an object category each and a part label per point.
struct LabeledParts {
  at::Tensor points;      // (N, P, 3) float32
  at::Tensor categories;  // (N,) int64 in [0, category_names.size())
  at::Tensor parts;       // (N, P) int64 in [0, num_parts)
  std::vector<std::string> category_names;
  int64_t size() const { return categories.defined() ? categories.size(0) : 0; }
};

// $DTRAIN_SHAPENET_PART_DIR when set, else empty (loading then asks for a directory).
std::string shapenet_part_default_root();

struct ShapeNetPartH5Options {
  // The directory holding the file lists and all_object_categories.txt.
  TORCH_ARG(std::string, root) = shapenet_part_default_root();
  // Keep the first num_points points of each cloud; 0 keeps all P.
  TORCH_ARG(int64_t, num_points) = 0;
  // Split::kTrain reads the validation files too, as PointNet++ trains.
  TORCH_ARG(bool, train_with_val) = true;
  // Part labels must lie in [0, num_parts).
  TORCH_ARG(int64_t, num_parts) = 50;
};

// Split::kTrain: the training (and validation) files; Split::kTest: the test
// files; each list's files concatenated in order.
LabeledParts load_shapenet_part_h5(Split split, const ShapeNetPartH5Options& options = {});

// The first num_points points of every cloud and their parts, as the
// reader's num_points keeps them. Throws dtrain::Error unless
// 0 < num_points <= P.
LabeledParts first_points(LabeledParts clouds, int64_t num_points);

}  // namespace dtrain::datasets

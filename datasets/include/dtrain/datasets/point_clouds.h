// Labelled point clouds, and the reader of ModelNet40's published HDF5 files
// (modelnet40_ply_hdf5_2048, the layout of PointNet and PointNet++).
//
// The layout: one directory holding
//   train_files.txt, test_files.txt  one .h5 path a line, as published
//                                    "data/modelnet40_ply_hdf5_2048/ply_data_train0.h5";
//                                    a path that does not exist relative to the
//                                    directory is looked up by its file name in it
//   shape_names.txt                  one class name a line; label i is line i
//   *.h5                             'data' float32 (n, P, 3), 'label' uint8 (n, 1)
//                                    or (n,) of any integer type, and optionally
//                                    'normal' float32 (n, P, 3)
// write_synthetic_shapes (synthetic_shapes.h) writes the same layout.
//
//   auto train = dtrain::datasets::load_modelnet_h5(
//       dtrain::datasets::Split::kTrain,
//       dtrain::datasets::ModelNetH5Options().root("modelnet40_ply_hdf5_2048").num_points(1024));
//   train.points  // (9840, 1024, 3) float32
//   train.labels  // (9840,) int64 in [0, 40)
//
// Contract: loading reads every file of the split into memory, in the order
// the list names them. It throws dtrain::IOError naming the directory or
// file and what was wrong (missing, a shape that disagrees with the others,
// a label outside the class names), and dtrain::Error when this build of
// dtrain has no HDF5 (-DDTRAIN_HDF5=OFF). Safe to call from several threads:
// the HDF5 calls take one process-wide lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include "dtrain/datasets/split.h"

namespace dtrain::datasets {

// Point clouds with one label each, held in memory.
struct LabeledClouds {
  at::Tensor points;   // (N, P, 3) float32
  at::Tensor labels;   // (N,) int64 in [0, class_names.size())
  at::Tensor normals;  // (N, P, 3) float32 unit vectors, or undefined when not loaded
  std::vector<std::string> class_names;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// $DTRAIN_MODELNET_DIR when set, else empty (loading then asks for a directory).
std::string modelnet_default_root();

struct ModelNetH5Options {
  // The directory holding train_files.txt, test_files.txt and shape_names.txt.
  TORCH_ARG(std::string, root) = modelnet_default_root();
  // Keep the first num_points points of each cloud; 0 keeps all P. The
  // published clouds are sampled without order, so the first k are as good
  // a subset as any (PointNet++ does the same).
  TORCH_ARG(int64_t, num_points) = 0;
  // Also read each file's 'normal' dataset (an error when a file lacks it).
  TORCH_ARG(bool, load_normals) = false;
};

// Loads every file that the split's list names, concatenated in list order.
LabeledClouds load_modelnet_h5(Split split, const ModelNetH5Options& options = {});

// The first num_points points of every cloud (and their normals), as the
// readers' num_points keeps them. Throws dtrain::Error unless
// 0 < num_points <= P.
LabeledClouds first_points(LabeledClouds clouds, int64_t num_points);

}  // namespace dtrain::datasets

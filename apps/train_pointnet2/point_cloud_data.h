// The clouds train_pointnet2 trains on, as its flags choose them.
#pragma once

#include <string>
#include <vector>

#include "classification.h"
#include "train_options.h"

namespace dtrain::apps {

struct PointCloudData {
  LabeledTensors train;  // inputs (N, num_points, 3 or 6 with normals)
  LabeledTensors test;
  std::vector<std::string> class_names;
  std::string root;  // where the files are
};

// The synthetic shapes (written first when missing; safe for several ranks
// at once) or ModelNet40's HDF5 files, limited by --train-limit and
// --test-limit. Throws dtrain::IOError naming the directory or file when the
// data cannot be read.
PointCloudData load_point_cloud_data(const PointNet2TrainOptions& options);

}  // namespace dtrain::apps

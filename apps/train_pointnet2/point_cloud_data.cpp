#include "point_cloud_data.h"

#include <ATen/ATen.h>

#include "dtrain/datasets/point_clouds.h"
#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace {

namespace ds = dtrain::datasets;

LabeledTensors as_inputs(const ds::LabeledClouds& clouds, bool normals, int64_t limit) {
  const at::Tensor inputs = normals ? at::cat({clouds.points, clouds.normals}, 2) : clouds.points;
  return LabeledTensors{inputs, clouds.labels}.first(limit);
}

std::string dataset_root(const PointNet2TrainOptions& options) {
  if (options.data == CloudData::kSynthetic) {
    return ensure_synthetic_root(options);
  }
  const std::string root =
      options.data_dir.empty() ? ds::modelnet_default_root() : options.data_dir;
  DTRAIN_CHECK(!root.empty(),
               "--dataset modelnet40 needs --data-dir (or $DTRAIN_MODELNET_DIR): the directory "
               "of modelnet40_ply_hdf5_2048 with train_files.txt and test_files.txt");
  return root;
}

}  // namespace

PointCloudData load_point_cloud_data(const PointNet2TrainOptions& options) {
  if (synthetic_in_memory(options)) {
    const auto synthetic = synthetic_options(options);
    const ds::LabeledClouds train = ds::first_points(
        ds::generate_synthetic_shapes(ds::Split::kTrain, synthetic), options.num_points);
    const ds::LabeledClouds test = ds::first_points(
        ds::generate_synthetic_shapes(ds::Split::kTest, synthetic), options.num_points);
    return {as_inputs(train, options.normals, options.limits.train),
            as_inputs(test, options.normals, options.limits.test), train.class_names, "memory"};
  }
  const std::string root = dataset_root(options);
  const auto read = ds::ModelNetH5Options()
                        .root(root)
                        .num_points(options.num_points)
                        .load_normals(options.normals);
  const ds::LabeledClouds train = ds::load_modelnet_h5(ds::Split::kTrain, read);
  const ds::LabeledClouds test = ds::load_modelnet_h5(ds::Split::kTest, read);
  return {as_inputs(train, options.normals, options.limits.train),
          as_inputs(test, options.normals, options.limits.test), train.class_names, root};
}

}  // namespace dtrain::apps

#include "dtrain/datasets/point_clouds.h"

#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "cloud_files.h"
#include "dtrain/util/errors.h"
#include "environment.h"
#include "h5_file.h"
#include "text_lines.h"

namespace dtrain::datasets {

namespace {

namespace fs = std::filesystem;

struct CloudFile {
  std::string path;
  int64_t points_per_cloud = 0;  // P, before num_points takes the first few
  at::Tensor points;
  at::Tensor labels;
  at::Tensor normals;
};

CloudFile read_cloud_file(const std::string& path, const ModelNetH5Options& options) {
  H5File file(path, H5File::Mode::kRead);
  CloudsAndLabels clouds = read_clouds_and_labels(file, path, options.num_points());
  CloudFile out{path, clouds.points_per_cloud, std::move(clouds.points), std::move(clouds.labels),
                at::Tensor()};
  if (options.load_normals()) {
    DTRAIN_CHECK_AS(IOError, file.has("normal"), "'", path,
                    "' has no dataset 'normal' (load_normals is set)");
    const std::vector<int64_t> shape = file.shape("data");
    const std::vector<int64_t> normal_shape = file.shape("normal");
    DTRAIN_CHECK_AS(IOError, normal_shape == shape, "'", path, "': dataset 'normal' has shape ",
                    at::IntArrayRef(normal_shape), " but 'data' has ", at::IntArrayRef(shape));
    out.normals = file.read("normal", at::kFloat).narrow(1, 0, out.points.size(1)).contiguous();
  }
  return out;
}

}  // namespace

std::string modelnet_default_root() {
  return env_or("DTRAIN_MODELNET_DIR");
}

LabeledClouds load_modelnet_h5(Split split, const ModelNetH5Options& options) {
  require_hdf5("load_modelnet_h5");
  DTRAIN_CHECK(options.num_points() >= 0,
               "load_modelnet_h5: num_points must be 0 (all) or positive, got ",
               options.num_points());
  DTRAIN_CHECK_AS(IOError, !options.root().empty(),
                  "load_modelnet_h5: no directory given: pass ModelNetH5Options().root(...) or "
                  "set DTRAIN_MODELNET_DIR to the directory holding train_files.txt, "
                  "test_files.txt and shape_names.txt (e.g. the unpacked "
                  "modelnet40_ply_hdf5_2048)");
  const fs::path root(options.root());
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, fs::is_directory(root, ec), "ModelNet HDF5 directory '", root.string(),
                  "' does not exist (pass the unpacked modelnet40_ply_hdf5_2048 directory, "
                  "which holds train_files.txt)");

  const fs::path names_path = root / "shape_names.txt";
  LabeledClouds out;
  out.class_names = read_text_lines(names_path, "the class names, one a line");
  DTRAIN_CHECK_AS(IOError, !out.class_names.empty(), "'", names_path.string(),
                  "' names no classes");
  const auto num_classes = static_cast<int64_t>(out.class_names.size());

  const std::vector<std::string> files = listed_files(
      root, split == Split::kTrain ? "train_files.txt" : "test_files.txt",
      split == Split::kTrain ? "the list of training files" : "the list of test files");

  std::vector<at::Tensor> points;
  std::vector<at::Tensor> labels;
  std::vector<at::Tensor> normals;
  std::string first_path;
  int64_t points_per_cloud = -1;
  for (const std::string& path : files) {
    CloudFile file = read_cloud_file(path, options);
    if (points_per_cloud < 0) {
      points_per_cloud = file.points_per_cloud;
      first_path = file.path;
    }
    DTRAIN_CHECK_AS(IOError, file.points_per_cloud == points_per_cloud, "'", file.path,
                    "' holds clouds of ", file.points_per_cloud, " points but '", first_path,
                    "' holds clouds of ", points_per_cloud);
    check_label_range(file.labels, num_classes, file.path, "label", "classes", names_path.string());
    points.push_back(std::move(file.points));
    labels.push_back(std::move(file.labels));
    if (options.load_normals()) {
      normals.push_back(std::move(file.normals));
    }
  }
  out.points = at::cat(points);
  out.labels = at::cat(labels);
  if (options.load_normals()) {
    out.normals = at::cat(normals);
  }
  return out;
}

}  // namespace dtrain::datasets

#include "dtrain/datasets/point_clouds.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"
#include "h5_file.h"
#include "text_lines.h"

namespace dtrain::datasets {

namespace {

namespace fs = std::filesystem;
using detail::concat;

// The .h5 file a list's line names: as given (absolute, or relative to the
// root), else by its file name in the root. The published lists say
// "data/modelnet40_ply_hdf5_2048/ply_data_train0.h5", a path relative to
// PointNet's checkout rather than to the directory that holds the list.
fs::path resolve_listed(const fs::path& root, const fs::path& list, const std::string& line) {
  const fs::path given(line);
  const fs::path as_given = given.is_absolute() ? given : root / given;
  const fs::path by_name = root / given.filename();
  std::error_code ec;
  if (fs::is_regular_file(as_given, ec)) {
    return as_given;
  }
  if (fs::is_regular_file(by_name, ec)) {
    return by_name;
  }
  if (as_given == by_name) {
    throw IOError(concat("'", list.string(), "' lists '", line, "', but '", by_name.string(),
                         "' does not exist"));
  }
  throw IOError(concat("'", list.string(), "' lists '", line, "', but neither '", as_given.string(),
                       "' nor '", by_name.string(), "' exists"));
}

struct CloudFile {
  std::string path;
  int64_t points_per_cloud = 0;  // P, before num_points takes the first few
  at::Tensor points;
  at::Tensor labels;
  at::Tensor normals;
};

CloudFile read_cloud_file(const std::string& path, const ModelNetH5Options& options) {
  H5File file(path, H5File::Mode::kRead);
  CloudFile out;
  out.path = path;

  const std::vector<int64_t> shape = file.shape("data");
  DTRAIN_CHECK_AS(IOError, shape.size() == 3 && shape[2] == 3, "'", path,
                  "': dataset 'data' must have shape (N, P, 3), got ", at::IntArrayRef(shape));
  const int64_t clouds = shape[0];
  out.points_per_cloud = shape[1];
  DTRAIN_CHECK_AS(IOError, options.num_points() <= out.points_per_cloud, "num_points is ",
                  options.num_points(), " but '", path, "' holds clouds of ", out.points_per_cloud,
                  " points");
  const int64_t keep = options.num_points() > 0 ? options.num_points() : out.points_per_cloud;

  const std::vector<int64_t> label_shape = file.shape("label");
  DTRAIN_CHECK_AS(IOError,
                  label_shape.size() == 1 || (label_shape.size() == 2 && label_shape[1] == 1), "'",
                  path, "': dataset 'label' must have shape (N,) or (N, 1), got ",
                  at::IntArrayRef(label_shape));
  DTRAIN_CHECK_AS(IOError, label_shape[0] == clouds, "'", path, "' holds ", clouds,
                  " clouds in 'data' but ", label_shape[0], " labels in 'label'");

  out.points = file.read("data", at::kFloat).narrow(1, 0, keep).contiguous();
  out.labels = file.read("label", at::kLong).reshape({clouds});
  if (options.load_normals()) {
    DTRAIN_CHECK_AS(IOError, file.has("normal"), "'", path,
                    "' has no dataset 'normal' (load_normals is set)");
    const std::vector<int64_t> normal_shape = file.shape("normal");
    DTRAIN_CHECK_AS(IOError, normal_shape == shape, "'", path, "': dataset 'normal' has shape ",
                    at::IntArrayRef(normal_shape), " but 'data' has ", at::IntArrayRef(shape));
    out.normals = file.read("normal", at::kFloat).narrow(1, 0, keep).contiguous();
  }
  return out;
}

}  // namespace

std::string modelnet_default_root() {
  if (const char* dir = std::getenv("DTRAIN_MODELNET_DIR"); dir != nullptr) {
    return dir;
  }
  return {};
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
                  "' does not exist");

  const fs::path names_path = root / "shape_names.txt";
  LabeledClouds out;
  out.class_names = read_text_lines(names_path, "the class names, one a line");
  DTRAIN_CHECK_AS(IOError, !out.class_names.empty(), "'", names_path.string(),
                  "' names no classes");
  const auto num_classes = static_cast<int64_t>(out.class_names.size());

  const fs::path list = root / (split == Split::kTrain ? "train_files.txt" : "test_files.txt");
  const std::vector<std::string> lines = read_text_lines(
      list, split == Split::kTrain ? "the list of training files" : "the list of test files");
  DTRAIN_CHECK_AS(IOError, !lines.empty(), "'", list.string(), "' lists no files");

  std::vector<at::Tensor> points;
  std::vector<at::Tensor> labels;
  std::vector<at::Tensor> normals;
  std::string first_path;
  int64_t points_per_cloud = -1;
  for (const std::string& line : lines) {
    CloudFile file = read_cloud_file(resolve_listed(root, list, line).string(), options);
    if (points_per_cloud < 0) {
      points_per_cloud = file.points_per_cloud;
      first_path = file.path;
    }
    DTRAIN_CHECK_AS(IOError, file.points_per_cloud == points_per_cloud, "'", file.path,
                    "' holds clouds of ", file.points_per_cloud, " points but '", first_path,
                    "' holds clouds of ", points_per_cloud);
    if (file.labels.numel() > 0) {
      const int64_t low = file.labels.min().item<int64_t>();
      const int64_t high = file.labels.max().item<int64_t>();
      DTRAIN_CHECK_AS(IOError, low >= 0 && high < num_classes, "'", file.path, "' holds label ",
                      low < 0 ? low : high, ", but '", names_path.string(), "' names ", num_classes,
                      " classes (labels 0 to ", num_classes - 1, ")");
    }
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

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "cloud_files.h"
#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/util/errors.h"
#include "environment.h"
#include "h5_file.h"
#include "text_lines.h"

namespace dtrain::datasets {

namespace {

namespace fs = std::filesystem;

// "Airplane\t02691156" -> "Airplane".
std::vector<std::string> category_names(const fs::path& path) {
  std::vector<std::string> names;
  for (const std::string& line : read_text_lines(path, "the object categories, one a line")) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  DTRAIN_CHECK_AS(IOError, !names.empty(), "'", path.string(), "' names no categories");
  return names;
}

}  // namespace

std::string shapenet_part_default_root() {
  return env_or("DTRAIN_SHAPENET_PART_DIR");
}

LabeledParts load_shapenet_part_h5(Split split, const ShapeNetPartH5Options& options) {
  require_hdf5("load_shapenet_part_h5");
  DTRAIN_CHECK(options.num_points() >= 0,
               "load_shapenet_part_h5: num_points must be 0 (all) or positive, got ",
               options.num_points());
  DTRAIN_CHECK(options.num_parts() >= 1, "load_shapenet_part_h5: num_parts must be positive, got ",
               options.num_parts());
  DTRAIN_CHECK_AS(IOError, !options.root().empty(),
                  "load_shapenet_part_h5: no directory given: pass "
                  "ShapeNetPartH5Options().root(...) or set DTRAIN_SHAPENET_PART_DIR to the "
                  "directory holding train_hdf5_file_list.txt and all_object_categories.txt "
                  "(the unpacked shapenet_part_seg_hdf5_data)");
  const fs::path root(options.root());
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, fs::is_directory(root, ec), "ShapeNet-Part HDF5 directory '",
                  root.string(),
                  "' does not exist (pass the unpacked shapenet_part_seg_hdf5_data directory, "
                  "which holds train_hdf5_file_list.txt)");

  LabeledParts out;
  const fs::path names_path = root / "all_object_categories.txt";
  out.category_names = category_names(names_path);
  const auto num_categories = static_cast<int64_t>(out.category_names.size());

  std::vector<std::string> files;
  if (split == Split::kTrain) {
    files = listed_files(root, "train_hdf5_file_list.txt", "the list of training files");
    if (options.train_with_val()) {
      for (auto& path : listed_files(root, "val_hdf5_file_list.txt", "the list of validation files",
                                     /*may_be_empty=*/true)) {
        files.push_back(std::move(path));
      }
    }
  } else {
    files = listed_files(root, "test_hdf5_file_list.txt", "the list of test files");
  }

  std::vector<at::Tensor> points;
  std::vector<at::Tensor> categories;
  std::vector<at::Tensor> parts;
  int64_t points_per_cloud = -1;
  for (const std::string& path : files) {
    H5File file(path, H5File::Mode::kRead);
    CloudsAndLabels clouds = read_clouds_and_labels(file, path, options.num_points());
    if (points_per_cloud < 0) {
      points_per_cloud = clouds.points_per_cloud;
    }
    DTRAIN_CHECK_AS(IOError, clouds.points_per_cloud == points_per_cloud, "'", path,
                    "' holds clouds of ", clouds.points_per_cloud, " points but '", files.front(),
                    "' holds clouds of ", points_per_cloud);
    check_label_range(clouds.labels, num_categories, path, "category", "categories",
                      names_path.string());
    const std::vector<int64_t> pid_shape = file.shape("pid");
    DTRAIN_CHECK_AS(IOError,
                    pid_shape.size() == 2 && pid_shape[0] == clouds.labels.size(0) &&
                        pid_shape[1] == clouds.points_per_cloud,
                    "'", path, "': dataset 'pid' must have shape (", clouds.labels.size(0), ", ",
                    clouds.points_per_cloud, "), one part per point of 'data', got ",
                    at::IntArrayRef(pid_shape));
    at::Tensor pid = file.read("pid", at::kLong).narrow(1, 0, clouds.points.size(1)).contiguous();
    DTRAIN_CHECK_AS(
        IOError,
        pid.numel() == 0 ||
            (pid.min().item<int64_t>() >= 0 && pid.max().item<int64_t>() < options.num_parts()),
        "'", path, "' holds part labels outside [0, ", options.num_parts(), ") (num_parts)");
    points.push_back(std::move(clouds.points));
    categories.push_back(std::move(clouds.labels));
    parts.push_back(std::move(pid));
  }
  out.points = at::cat(points);
  out.categories = at::cat(categories);
  out.parts = at::cat(parts);
  return out;
}

}  // namespace dtrain::datasets

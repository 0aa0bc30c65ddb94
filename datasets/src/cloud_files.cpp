#include "cloud_files.h"

#include "dtrain/util/errors.h"
#include "text_lines.h"

namespace dtrain::datasets {

namespace fs = std::filesystem;
using detail::concat;

namespace {

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

}  // namespace

std::vector<std::string> listed_files(const fs::path& root, const std::string& list_name,
                                      const char* what, bool may_be_empty) {
  const fs::path list = root / list_name;
  const std::vector<std::string> lines = read_text_lines(list, what);
  DTRAIN_CHECK_AS(IOError, may_be_empty || !lines.empty(), "'", list.string(), "' lists no files");
  std::vector<std::string> files;
  files.reserve(lines.size());
  for (const std::string& line : lines) {
    files.push_back(resolve_listed(root, list, line).string());
  }
  return files;
}

CloudsAndLabels read_clouds_and_labels(const H5File& file, const std::string& path,
                                       int64_t num_points) {
  CloudsAndLabels out;
  const std::vector<int64_t> shape = file.shape("data");
  DTRAIN_CHECK_AS(IOError, shape.size() == 3 && shape[2] == 3, "'", path,
                  "': dataset 'data' must have shape (N, P, 3), got ", at::IntArrayRef(shape));
  const int64_t clouds = shape[0];
  out.points_per_cloud = shape[1];
  DTRAIN_CHECK_AS(IOError, num_points <= out.points_per_cloud, "num_points is ", num_points,
                  " but '", path, "' holds clouds of ", out.points_per_cloud, " points");
  const int64_t keep = num_points > 0 ? num_points : out.points_per_cloud;

  const std::vector<int64_t> label_shape = file.shape("label");
  DTRAIN_CHECK_AS(IOError,
                  label_shape.size() == 1 || (label_shape.size() == 2 && label_shape[1] == 1), "'",
                  path, "': dataset 'label' must have shape (N,) or (N, 1), got ",
                  at::IntArrayRef(label_shape));
  DTRAIN_CHECK_AS(IOError, label_shape[0] == clouds, "'", path, "' holds ", clouds,
                  " clouds in 'data' but ", label_shape[0], " labels in 'label'");

  out.points = file.read("data", at::kFloat).narrow(1, 0, keep).contiguous();
  out.labels = file.read("label", at::kLong).reshape({clouds});
  return out;
}

void check_label_range(const at::Tensor& labels, int64_t count, const std::string& path,
                       const std::string& noun, const std::string& counted,
                       const std::string& source) {
  if (labels.numel() == 0) {
    return;
  }
  const int64_t low = labels.min().item<int64_t>();
  const int64_t high = labels.max().item<int64_t>();
  DTRAIN_CHECK_AS(IOError, low >= 0 && high < count, "'", path, "' holds ", noun, " ",
                  low < 0 ? low : high, ", but '", source, "' names ", count, " ", counted,
                  " (0 to ", count - 1, ")");
}

}  // namespace dtrain::datasets

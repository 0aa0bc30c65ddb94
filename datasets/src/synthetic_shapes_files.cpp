// The synthetic shapes on disk: writing them in ModelNet40's HDF5 layout,
// atomically, and finding them again. See Note [Writing a dataset at once].
#include "dtrain/datasets/synthetic_shapes.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"
#include "environment.h"
#include "h5_file.h"
#include "synthetic_shapes_options.h"
#include "text_lines.h"

namespace dtrain::datasets {

// Note [Writing a dataset at once]
// A dataset appears at its root complete or not at all: the writer fills a
// temporary directory beside the root (same file system) and renames it to
// the root as its last step. rename(2) of a directory fails when the target
// is a non-empty directory, so when the ranks of a job generate the same
// dataset at once, exactly one rename wins; the others delete their own
// temporary directory and read the winner's, which is equal to theirs
// since generation is deterministic. A writer that dies leaves only its
// temporary directory (".<root name>.tmp-<pid>-<n>"), never a partial root.

namespace {

namespace fs = std::filesystem;
using detail::concat;

constexpr const char* kRecordFile = "synthetic_shapes.txt";

// The options as recorded in synthetic_shapes.txt, in this order.
std::vector<std::pair<std::string, std::string>> recorded_options(
    const SyntheticShapesOptions& options) {
  return {
      {"generator_version", std::to_string(kSyntheticShapesVersion)},
      {"num_classes", std::to_string(options.num_classes())},
      {"train_per_class", std::to_string(options.train_per_class())},
      {"test_per_class", std::to_string(options.test_per_class())},
      {"points_per_cloud", std::to_string(options.points_per_cloud())},
      {"seed", std::to_string(options.seed())},
      {"shapes_per_file", std::to_string(options.shapes_per_file())},
  };
}

// "a/b/" names the directory b like "a/b" does; rename needs the latter.
fs::path without_trailing_separator(const std::string& root) {
  fs::path path(root);
  return path.has_filename() ? path : path.parent_path();
}

// Writes one split's .h5 files into dir and returns their names for the list.
std::vector<std::string> write_split(const fs::path& dir, Split split,
                                     const SyntheticShapesOptions& options) {
  const SyntheticSplit generated =
      generate_synthetic_split(split, options, "write_synthetic_shapes");
  const LabeledClouds& clouds = generated.clouds;
  // ModelNet's and ShapeNet-Part's files store labels as uint8 of shape
  // (n, 1), and ShapeNet-Part's parts as uint8 (n, P).
  const at::Tensor labels = clouds.labels.to(at::kByte).unsqueeze(1);
  const at::Tensor parts = generated.parts.to(at::kByte);
  const std::string prefix = split == Split::kTrain ? "ply_data_train" : "ply_data_test";
  std::vector<std::string> names;
  for (int64_t begin = 0; begin < clouds.size(); begin += options.shapes_per_file()) {
    const int64_t count = std::min(options.shapes_per_file(), clouds.size() - begin);
    names.push_back(prefix + std::to_string(names.size()) + ".h5");
    H5File file((dir / names.back()).string(), H5File::Mode::kCreate);
    file.write("data", clouds.points.narrow(0, begin, count));
    file.write("label", labels.narrow(0, begin, count));
    file.write("normal", clouds.normals.narrow(0, begin, count));
    file.write("pid", parts.narrow(0, begin, count));
    file.close();
  }
  return names;
}

void write_dataset(const fs::path& dir, const SyntheticShapesOptions& options) {
  const std::vector<std::string> train_files = write_split(dir, Split::kTrain, options);
  const std::vector<std::string> test_files = write_split(dir, Split::kTest, options);
  const auto& names = synthetic_shape_names();
  const std::vector<std::string> class_names(names.begin(), names.begin() + options.num_classes());
  // ModelNet40's layout.
  write_text_lines(dir / "train_files.txt", train_files);
  write_text_lines(dir / "test_files.txt", test_files);
  write_text_lines(dir / "shape_names.txt", class_names);
  // ShapeNet-Part's, over the same files; no validation split.
  write_text_lines(dir / "train_hdf5_file_list.txt", train_files);
  write_text_lines(dir / "val_hdf5_file_list.txt", {});
  write_text_lines(dir / "test_hdf5_file_list.txt", test_files);
  write_text_lines(dir / "all_object_categories.txt", class_names);
  // The parts of these classes: a prefix of synthetic_part_names().
  std::vector<std::string> part_names;
  for (const std::string& part : synthetic_part_names()) {
    const std::string shape = part.substr(0, part.find('/'));
    if (std::find(class_names.begin(), class_names.end(), shape) != class_names.end()) {
      part_names.push_back(part);
    }
  }
  write_text_lines(dir / "part_names.txt", part_names);
  std::vector<std::string> record = {
      "# Synthetic shapes written by dtrain::datasets::write_synthetic_shapes with these",
      "# options; ensure_synthetic_shapes compares them before it uses this directory."};
  for (const auto& [key, value] : recorded_options(options)) {
    record.push_back(key + "=" + value);
  }
  write_text_lines(dir / kRecordFile, record);
}

// A new, empty directory beside root that no other writer uses.
fs::path make_temporary_dir(const fs::path& root) {
  static std::atomic<uint64_t> counter{0};
  const fs::path parent = root.parent_path();
  std::error_code ec;
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    DTRAIN_CHECK_AS(IOError, !ec, "cannot create directory '", parent.string(), "' for '",
                    root.string(), "': ", ec.message());
  }
  for (;;) {
    const fs::path candidate =
        parent / concat(".", root.filename().string(), ".tmp-", ::getpid(), "-", counter++);
    if (fs::create_directory(candidate, ec)) {
      return candidate;
    }
    DTRAIN_CHECK_AS(IOError, !ec, "cannot create directory '", candidate.string(),
                    "': ", ec.message());
    // It existed: left over by a dead process whose pid came round again. Try the next name.
  }
}

// True when root does not exist or is an empty directory, which the
// rename below replaces (rename(2) takes an empty directory's place).
bool absent_or_empty(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    return true;
  }
  return fs::is_directory(root, ec) && fs::is_empty(root, ec) && !ec;
}

// Writes the dataset and renames it to root (Note [Writing a dataset at
// once]). Returns false when another writer's rename came first.
bool write_and_rename(const fs::path& root, const SyntheticShapesOptions& options) {
  const fs::path temporary = make_temporary_dir(root);
  std::error_code ec;
  try {
    write_dataset(temporary, options);
  } catch (...) {
    fs::remove_all(temporary, ec);
    throw;
  }
  fs::rename(temporary, root, ec);
  if (!ec) {
    return true;
  }
  std::error_code ignored;
  fs::remove_all(temporary, ignored);
  if (ec == std::errc::directory_not_empty || ec == std::errc::file_exists) {
    return false;
  }
  throw IOError(
      concat("cannot rename '", temporary.string(), "' to '", root.string(), "': ", ec.message()));
}

// Throws unless root holds the synthetic shapes of these options.
void check_recorded_options(const fs::path& root, const SyntheticShapesOptions& options) {
  // The directory may be the user's own: nothing in it is touched, and the
  // advice never says to delete it.
  const std::string advice =
      "; nothing in it was changed: name a new or empty directory for the dataset";
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, fs::is_directory(root, ec), "ensure_synthetic_shapes: '", root.string(),
                  "' exists but is not a directory", advice);
  const fs::path record_path = root / kRecordFile;
  DTRAIN_CHECK_AS(IOError, fs::is_regular_file(record_path, ec), "ensure_synthetic_shapes: '",
                  root.string(), "' exists but has no ", kRecordFile,
                  ", so it is not a dataset written by write_synthetic_shapes", advice);
  std::map<std::string, std::string> recorded;
  for (const std::string& line : read_text_lines(record_path, "the synthetic shapes' options")) {
    const auto equals = line.find('=');
    if (line[0] != '#' && equals != std::string::npos) {
      recorded[line.substr(0, equals)] = line.substr(equals + 1);
    }
  }
  for (const auto& [key, wanted] : recorded_options(options)) {
    const auto found = recorded.find(key);
    DTRAIN_CHECK_AS(IOError, found != recorded.end() && found->second == wanted,
                    "ensure_synthetic_shapes: '", root.string(),
                    "' holds synthetic shapes generated with ",
                    found == recorded.end() ? "no " + key : key + "=" + found->second, " (see its ",
                    kRecordFile, ") but ", key, "=", wanted, " was asked for", advice);
  }
}

// $DTRAIN_DATA_DIR, else $XDG_CACHE_HOME/dtrain/datasets, else $HOME/.cache/dtrain/datasets.
fs::path data_dir() {
  if (std::string dir = env_or("DTRAIN_DATA_DIR"); !dir.empty()) {
    return dir;
  }
  if (std::string cache = env_or("XDG_CACHE_HOME"); !cache.empty()) {
    return fs::path(cache) / "dtrain" / "datasets";
  }
  const std::string home = env_or("HOME");
  DTRAIN_CHECK(!home.empty(),
               "synthetic_shapes_default_root: none of DTRAIN_DATA_DIR, XDG_CACHE_HOME and HOME "
               "is set; set DTRAIN_DATA_DIR to the directory for dtrain's datasets");
  return fs::path(home) / ".cache" / "dtrain" / "datasets";
}

}  // namespace

void write_synthetic_shapes(const std::string& root, const SyntheticShapesOptions& options) {
  require_hdf5("write_synthetic_shapes");
  check_synthetic_shapes_options(options, "write_synthetic_shapes");
  const fs::path target = without_trailing_separator(root);
  std::error_code ec;
  if (!absent_or_empty(target) || !write_and_rename(target, options)) {
    throw IOError(concat("write_synthetic_shapes: '", target.string(),
                         "' already exists and is not empty; choose another root, or call "
                         "ensure_synthetic_shapes to reuse a dataset of the same options"));
  }
}

std::string ensure_synthetic_shapes(const std::string& root,
                                    const SyntheticShapesOptions& options) {
  require_hdf5("ensure_synthetic_shapes");
  check_synthetic_shapes_options(options, "ensure_synthetic_shapes");
  const fs::path target = without_trailing_separator(root);
  if (absent_or_empty(target)) {
    // Whether this rename or another writer's won, the root now holds a
    // complete dataset, checked below like one found there.
    write_and_rename(target, options);
  }
  check_recorded_options(target, options);
  return root;
}

std::string synthetic_shapes_default_root(const SyntheticShapesOptions& options) {
  const std::string name =
      concat("synthetic_shapes-v", kSyntheticShapesVersion, "-c", options.num_classes(), "-tr",
             options.train_per_class(), "-te", options.test_per_class(), "-p",
             options.points_per_cloud(), "-s", options.seed(), "-f", options.shapes_per_file());
  return (data_dir() / name).string();
}

}  // namespace dtrain::datasets

// dtrain::datasets' synthetic shapes: the clouds in memory (no HDF5
// needed) and their part labels, and the dataset on disk in ModelNet40's
// and ShapeNet-Part's layouts, written once even when several threads or
// processes ask for it at the same time.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "dtrain/datasets/point_clouds.h"
#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/datasets/synthetic_shapes.h"
#include "expect_error.h"
#include "hdf5_testing.h"
#include "multi_process.h"
#include "portable_math.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using dtrain::datasets::ensure_synthetic_shapes;
using dtrain::datasets::first_points;
using dtrain::datasets::generate_synthetic_parts;
using dtrain::datasets::generate_synthetic_shapes;
using dtrain::datasets::LabeledClouds;
using dtrain::datasets::load_modelnet_h5;
using dtrain::datasets::load_shapenet_part_h5;
using dtrain::datasets::ModelNetH5Options;
using dtrain::datasets::ShapeNetPartH5Options;
using dtrain::datasets::Split;
using dtrain::datasets::synthetic_part_names;
using dtrain::datasets::synthetic_shape_names;
using dtrain::datasets::SyntheticShapesOptions;
using dtrain::datasets::write_synthetic_shapes;
using dtrain::testing::expect_error;
using dtrain::testing::ScopedEnv;
using dtrain::testing::TempDir;

SyntheticShapesOptions small() {
  return SyntheticShapesOptions()
      .num_classes(3)
      .train_per_class(4)
      .test_per_class(2)
      .points_per_cloud(64)
      .seed(7);
}

void expect_same(const LabeledClouds& a, const LabeledClouds& b) {
  EXPECT_TRUE(at::equal(a.points, b.points));
  EXPECT_TRUE(at::equal(a.labels, b.labels));
  ASSERT_EQ(a.normals.defined(), b.normals.defined());
  if (a.normals.defined()) {
    EXPECT_TRUE(at::equal(a.normals, b.normals));
  }
  EXPECT_EQ(a.class_names, b.class_names);
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SyntheticShapes, TenOrMoreKindsWithDistinctNames) {
  const auto& names = synthetic_shape_names();
  EXPECT_GE(names.size(), 10u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  const auto data = generate_synthetic_shapes(Split::kTest, small());
  EXPECT_EQ(data.class_names, (std::vector<std::string>{names[0], names[1], names[2]}));
}

TEST(SyntheticShapes, SameOptionsGiveIdenticalClouds) {
  const auto a = generate_synthetic_shapes(Split::kTrain, small());
  const auto b = generate_synthetic_shapes(Split::kTrain, small());
  EXPECT_EQ(a.points.sizes(), (std::vector<int64_t>{12, 64, 3}));
  EXPECT_EQ(a.normals.sizes(), (std::vector<int64_t>{12, 64, 3}));
  EXPECT_EQ(a.labels.scalar_type(), at::kLong);
  expect_same(a, b);
}

// FNV-1a of the bytes of a contiguous tensor, continuing from `hash`.
uint64_t fnv1a(const at::Tensor& tensor, uint64_t hash = 0xcbf29ce484222325ull) {
  const at::Tensor data = tensor.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(data.const_data_ptr());
  for (std::size_t i = 0; i < data.nbytes(); ++i) {
    hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  }
  return hash;
}

// The generator's output for small(), bit for bit, as this code makes it
// on any machine (portable_math.h): a platform that computes otherwise, or
// a change to the generator, shows here. Such a change must also bump
// kSyntheticShapesVersion (datasets/src/synthetic_shapes_options.h), so that
// datasets written before it are not reused.
TEST(SyntheticShapes, FingerprintIsTheSameOnEveryMachine) {
  const auto data = generate_synthetic_shapes(Split::kTrain, small());
  EXPECT_EQ(fnv1a(data.labels, fnv1a(data.normals, fnv1a(data.points))), 0xa688fb012247aac9ull);
}

TEST(SyntheticShapes, SeedsAndSplitsGiveDifferentClouds) {
  const auto a = generate_synthetic_shapes(Split::kTrain, small());
  const auto other_seed = generate_synthetic_shapes(Split::kTrain, small().seed(8));
  EXPECT_FALSE(at::equal(a.points, other_seed.points));
  const auto test = generate_synthetic_shapes(Split::kTest, small().test_per_class(4));
  EXPECT_FALSE(at::equal(a.points, test.points)) << "the test split repeats the training clouds";
}

TEST(SyntheticShapes, EachSplitIsBalancedAndShuffled) {
  for (const Split split : {Split::kTrain, Split::kTest}) {
    const auto options = small().train_per_class(6).test_per_class(5);
    const int64_t per_class = split == Split::kTrain ? 6 : 5;
    const auto data = generate_synthetic_shapes(split, options);
    EXPECT_TRUE(at::equal(at::bincount(data.labels, {}, 3), at::full({3}, per_class, at::kLong)));
    EXPECT_FALSE(at::equal(data.labels, std::get<0>(data.labels.sort())))
        << "the classes come in order, not mixed";
  }
}

TEST(SyntheticShapes, CloudsAreCentredInTheUnitSphere) {
  const auto options = small().num_classes(static_cast<int64_t>(synthetic_shape_names().size()));
  const auto data = generate_synthetic_shapes(Split::kTest, options);
  EXPECT_LT(data.points.mean(1).abs().max().item<float>(), 1e-5f);
  // Like ModelNet's: the farthest point of every cloud at distance 1.
  const at::Tensor radius = std::get<0>(data.points.norm(2, -1).max(1));
  EXPECT_LT((radius - 1).abs().max().item<float>(), 1e-6f);
}

TEST(SyntheticShapes, NormalsAreUnitAndOutward) {
  const auto& names = synthetic_shape_names();
  const auto options =
      small().num_classes(static_cast<int64_t>(names.size())).points_per_cloud(256);
  const auto data = generate_synthetic_shapes(Split::kTrain, options);
  EXPECT_LT((data.normals.norm(2, -1) - 1).abs().max().item<float>(), 1e-6f);
  // Every solid but the torus is convex around its centroid, so its
  // outward normals point away from the origin, jitter aside.
  const at::Tensor outward = (data.normals * data.points).sum(-1).gt(0).to(at::kFloat).mean(1);
  for (int64_t i = 0; i < data.size(); ++i) {
    const std::string& name = names[data.labels[i].item<int64_t>()];
    if (name != "torus") {
      EXPECT_GE(outward[i].item<float>(), 0.99f) << name;
    }
  }
}

// How each cloud spreads over height y and distance from the y axis: an
// 8 x 8 histogram, as fractions of its points. Rotations about y (which
// every cloud gets at random) leave it unchanged. (N, P, 3) -> (N, 64).
at::Tensor height_radius_histogram(const at::Tensor& clouds) {
  constexpr int64_t kBins = 8;
  const at::Tensor y = clouds.select(2, 1);
  const at::Tensor radius = at::hypot(clouds.select(2, 0), clouds.select(2, 2));
  const at::Tensor y_bin = ((y + 1) * (kBins / 2.0)).floor().clamp(0, kBins - 1);
  const at::Tensor r_bin = (radius * kBins).floor().clamp(0, kBins - 1);
  const at::Tensor bin = (y_bin * kBins + r_bin).to(at::kLong);
  return at::one_hot(bin, kBins * kBins).sum(1).to(at::kFloat) / clouds.size(1);
}

TEST(SyntheticShapes, ClassesDifferMoreThanCloudsOfOneClass) {
  const auto& names = synthetic_shape_names();
  const auto classes = static_cast<int64_t>(names.size());
  const auto data = generate_synthetic_shapes(
      Split::kTrain, small().num_classes(classes).train_per_class(4).points_per_cloud(512));
  const at::Tensor histogram = height_radius_histogram(data.points);
  const at::Tensor distance = at::cdist(histogram, histogram, /*p=*/1);
  const at::Tensor not_self = at::eye(data.size(), at::kBool).logical_not();
  for (int64_t c = 0; c < classes; ++c) {
    const at::Tensor in_c = data.labels.eq(c);
    const float within = distance.masked_select(in_c.unsqueeze(1) & in_c.unsqueeze(0) & not_self)
                             .mean()
                             .item<float>();
    for (int64_t other = 0; other < classes; ++other) {
      if (other != c) {
        const float between =
            distance.masked_select(in_c.unsqueeze(1) & data.labels.eq(other).unsqueeze(0))
                .mean()
                .item<float>();
        EXPECT_LT(within, between) << names[c] << " vs " << names[other];
      }
    }
  }
}

TEST(SyntheticParts, NamesAreShapeSlashPartInShapeOrder) {
  const auto& parts = synthetic_part_names();
  const auto& shapes = synthetic_shape_names();
  EXPECT_EQ(std::set<std::string>(parts.begin(), parts.end()).size(), parts.size());
  std::size_t shape = 0;
  std::map<std::string, int> parts_of;
  for (const std::string& part : parts) {
    const std::string name = part.substr(0, part.find('/'));
    while (shape < shapes.size() && shapes[shape] != name) {
      ++shape;  // consecutive per shape, shapes in label order
    }
    ASSERT_LT(shape, shapes.size()) << part << " is out of order";
    ++parts_of[name];
  }
  for (const std::string& name : shapes) {
    EXPECT_GE(parts_of[name], 2) << name << " needs two parts or more to segment";
  }
}

// Every point's part as in generate_synthetic_parts, and where it lies:
// (N, P) part numbers of each cloud in [first part of its shape, next shape's).
TEST(SyntheticParts, EachCloudUsesItsShapesPartsAndOnlyThose) {
  const auto& shapes = synthetic_shape_names();
  const auto options =
      small().num_classes(static_cast<int64_t>(shapes.size())).points_per_cloud(512);
  const auto parts = generate_synthetic_parts(Split::kTrain, options);
  const auto clouds = generate_synthetic_shapes(Split::kTrain, options);
  // The same clouds as the classification set: labels took nothing from the random stream.
  EXPECT_TRUE(at::equal(parts.points, clouds.points));
  EXPECT_TRUE(at::equal(parts.categories, clouds.labels));
  EXPECT_EQ(parts.category_names, clouds.class_names);
  ASSERT_EQ(parts.parts.sizes(), (std::vector<int64_t>{parts.size(), 512}));
  ASSERT_EQ(parts.parts.scalar_type(), at::kLong);

  const auto& names = synthetic_part_names();
  for (int64_t i = 0; i < parts.size(); ++i) {
    const std::string& shape = shapes[parts.categories[i].item<int64_t>()];
    std::set<int64_t> seen;
    const at::Tensor cloud_parts = parts.parts[i];
    for (int64_t p = 0; p < cloud_parts.size(0); ++p) {
      seen.insert(cloud_parts[p].item<int64_t>());
    }
    std::set<int64_t> expected;
    for (std::size_t part = 0; part < names.size(); ++part) {
      if (names[part].rfind(shape + "/", 0) == 0) {
        expected.insert(static_cast<int64_t>(part));
      }
    }
    EXPECT_EQ(seen, expected) << shape << ": 512 points reach every part and no other";
  }
}

// The parts are where their names say: every "top" or "upper" part lies
// above the "bottom" or "lower" one of its cloud, the side of a cone, a
// pyramid or a dome above its base, and the torus's outer half farther
// from the axis than its inner half.
TEST(SyntheticParts, PartsLieWhereTheirNamesSay) {
  const auto& shapes = synthetic_shape_names();
  const auto options =
      small().num_classes(static_cast<int64_t>(shapes.size())).points_per_cloud(512);
  const auto data = generate_synthetic_parts(Split::kTest, options);
  const auto& names = synthetic_part_names();
  auto suffix = [&](int64_t part) { return names[part].substr(names[part].find('/') + 1); };
  int compared = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    const at::Tensor y = data.points[i].select(1, 1);
    const at::Tensor radius = at::hypot(data.points[i].select(1, 0), data.points[i].select(1, 2));
    const at::Tensor part = data.parts[i];
    const auto [lowest, highest] = at::aminmax(part);
    auto mean_where = [&](const at::Tensor& value, int64_t p) {
      return value.masked_select(part.eq(p)).mean().item<double>();
    };
    for (int64_t high = lowest.item<int64_t>(); high <= highest.item<int64_t>(); ++high) {
      for (int64_t low = lowest.item<int64_t>(); low <= highest.item<int64_t>(); ++low) {
        const std::string h = suffix(high);
        const std::string l = suffix(low);
        const bool above = ((h == "top" || h == "upper") && (l == "bottom" || l == "lower")) ||
                           ((h == "side" || h == "sides" || h == "cap") && l == "base");
        if (above) {
          EXPECT_GT(mean_where(y, high), mean_where(y, low)) << names[high] << " vs " << l;
          ++compared;
        }
        if (h == "outer" && l == "inner") {
          EXPECT_GT(mean_where(radius, high), mean_where(radius, low)) << names[high];
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, data.size()) << "one pair of parts compared in every cloud";
}

TEST(SyntheticShapes, BadOptionsAreNamed) {
  const auto kinds = static_cast<int64_t>(synthetic_shape_names().size());
  expect_error([&] { generate_synthetic_shapes(Split::kTrain, small().num_classes(kinds + 1)); },
               "generate_synthetic_shapes: num_classes must be from 1 to " + std::to_string(kinds) +
                   " (the kinds of shape there are), got " + std::to_string(kinds + 1));
  expect_error([] { generate_synthetic_shapes(Split::kTrain, small().points_per_cloud(0)); },
               "points_per_cloud must be positive, got 0");
  expect_error([] { generate_synthetic_shapes(Split::kTest, small().test_per_class(-1)); },
               "test_per_class must be positive, got -1");
}

TEST(SyntheticShapes, DefaultRootIsUnderTheDataDirAndKeyedByOptions) {
  {
    const ScopedEnv data_dir("DTRAIN_DATA_DIR", "/data/dtrain");
    const std::string root = dtrain::datasets::synthetic_shapes_default_root(small());
    EXPECT_EQ(fs::path(root).parent_path(), fs::path("/data/dtrain"));
    EXPECT_NE(root.find("synthetic_shapes-v"), std::string::npos) << root;
    EXPECT_NE(root.find("-c3-tr4-te2-p64-s7-"), std::string::npos) << root;
    EXPECT_NE(root, dtrain::datasets::synthetic_shapes_default_root(small().seed(8)));
  }
  const ScopedEnv no_data_dir("DTRAIN_DATA_DIR", nullptr);
  const ScopedEnv cache("XDG_CACHE_HOME", "/cache");
  EXPECT_EQ(fs::path(dtrain::datasets::synthetic_shapes_default_root()).parent_path(),
            fs::path("/cache/dtrain/datasets"));
}

TEST(SyntheticShapes, WrittenDatasetLoadsAsTheGeneratedClouds) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const fs::path root = dir.path() / "parent" / "shapes";  // the parent is made too
  const auto options = small().shapes_per_file(5);
  write_synthetic_shapes(root.string(), options);

  // 12 training clouds in files of 5, 5 and 2.
  EXPECT_EQ(bytes_of(root / "train_files.txt"),
            "ply_data_train0.h5\nply_data_train1.h5\nply_data_train2.h5\n");
  EXPECT_EQ(bytes_of(root / "test_files.txt"), "ply_data_test0.h5\nply_data_test1.h5\n");
  for (const Split split : {Split::kTrain, Split::kTest}) {
    const auto loaded =
        load_modelnet_h5(split, ModelNetH5Options().root(root.string()).load_normals(true));
    expect_same(loaded, generate_synthetic_shapes(split, options));
  }
  const auto first_16 =
      load_modelnet_h5(Split::kTest, ModelNetH5Options().root(root.string()).num_points(16));
  EXPECT_TRUE(at::equal(first_16.points,
                        generate_synthetic_shapes(Split::kTest, options).points.narrow(1, 0, 16)));
  EXPECT_EQ(entries_of(dir.path() / "parent"), std::vector<std::string>{"shapes"})
      << "the temporary directory was left behind";
}

// The same directory is a ShapeNet-Part dataset too.
TEST(SyntheticParts, WrittenDatasetLoadsAsShapeNetPart) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const fs::path root = dir.path() / "shapes";
  const auto options = small().shapes_per_file(5);
  write_synthetic_shapes(root.string(), options);
  for (const Split split : {Split::kTrain, Split::kTest}) {
    const auto loaded = load_shapenet_part_h5(
        split, ShapeNetPartH5Options()
                   .root(root.string())
                   .num_parts(static_cast<int64_t>(synthetic_part_names().size())));
    const auto generated = generate_synthetic_parts(split, options);
    EXPECT_TRUE(at::equal(loaded.points, generated.points));
    EXPECT_TRUE(at::equal(loaded.categories, generated.categories));
    EXPECT_TRUE(at::equal(loaded.parts, generated.parts));
    EXPECT_EQ(loaded.category_names, generated.category_names);
  }
  // The three shapes' parts, one a line.
  const auto& names = synthetic_part_names();
  std::string expected;
  for (const std::string& part : names) {
    const std::string shape = part.substr(0, part.find('/'));
    const auto& shapes = synthetic_shape_names();
    if (std::find(shapes.begin(), shapes.begin() + 3, shape) != shapes.begin() + 3) {
      expected += part + "\n";
    }
  }
  EXPECT_EQ(bytes_of(root / "part_names.txt"), expected);
  EXPECT_EQ(bytes_of(root / "val_hdf5_file_list.txt"), "");
}

// first_points cuts generated clouds the way the readers' num_points cuts
// the files, so an app without HDF5 trains on the same points.
TEST(SyntheticShapes, FirstPointsCutsLikeTheReaders) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const fs::path root = dir.path() / "shapes";
  const auto options = small();
  write_synthetic_shapes(root.string(), options);
  const auto clouds = first_points(generate_synthetic_shapes(Split::kTrain, options), 16);
  expect_same(
      clouds,
      load_modelnet_h5(Split::kTrain,
                       ModelNetH5Options().root(root.string()).num_points(16).load_normals(true)));
  const auto parts = first_points(generate_synthetic_parts(Split::kTest, options), 9);
  const auto read = load_shapenet_part_h5(
      Split::kTest, ShapeNetPartH5Options()
                        .root(root.string())
                        .num_points(9)
                        .num_parts(static_cast<int64_t>(synthetic_part_names().size())));
  EXPECT_TRUE(at::equal(parts.points, read.points));
  EXPECT_TRUE(at::equal(parts.parts, read.parts));
  EXPECT_TRUE(parts.points.is_contiguous() && parts.parts.is_contiguous());
}

TEST(SyntheticShapes, FirstPointsNamesABadCount) {
  const auto options = small();
  const int64_t held = options.points_per_cloud();
  for (const int64_t bad : {int64_t{0}, int64_t{-3}, held + 1}) {
    expect_error([&] { first_points(generate_synthetic_shapes(Split::kTest, options), bad); },
                 "num_points must be in [1, " + std::to_string(held) + "]");
    expect_error([&] { first_points(generate_synthetic_parts(Split::kTest, options), bad); },
                 "first_points(LabeledParts): num_points");
  }
}

TEST(SyntheticShapes, SameOptionsWriteIdenticalFiles) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_synthetic_shapes(dir.file("a"), small());
  write_synthetic_shapes(dir.file("b") + "/", small());  // a trailing slash names the same
  const auto names = entries_of(dir.path() / "a");
  ASSERT_EQ(names, entries_of(dir.path() / "b"));
  for (const std::string& name : names) {
    EXPECT_EQ(bytes_of(dir.path() / "a" / name), bytes_of(dir.path() / "b" / name)) << name;
  }
}

// The example of synthetic_shapes.h, with small options.
TEST(SyntheticShapes, HeaderExampleRuns) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const ScopedEnv data_dir("DTRAIN_DATA_DIR", dir.path().c_str());
  namespace ds = dtrain::datasets;
  const auto options = small();
  const std::string root =
      ds::ensure_synthetic_shapes(ds::synthetic_shapes_default_root(options), options);
  auto train = ds::load_modelnet_h5(ds::Split::kTrain, ds::ModelNetH5Options().root(root));
  EXPECT_EQ(train.size(), 12);
  EXPECT_EQ(fs::path(root).parent_path(), dir.path());
}

TEST(SyntheticShapes, WriteRefusesAnExistingRoot) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  std::ofstream(dir.file("notes.txt")) << "mine";
  expect_error(
      [&] { write_synthetic_shapes(dir.path().string(), small()); },
      "write_synthetic_shapes: '" + dir.path().string() + "' already exists and is not empty");
  EXPECT_EQ(entries_of(dir.path()), std::vector<std::string>{"notes.txt"});
}

// An empty directory (made by the user for the dataset) takes it.
TEST(SyntheticShapes, AnEmptyDirectoryIsWritten) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  for (const char* name : {"for_write", "for_ensure"}) {
    fs::create_directory(dir.path() / name);
  }
  write_synthetic_shapes(dir.file("for_write"), small());
  EXPECT_EQ(ensure_synthetic_shapes(dir.file("for_ensure"), small()), dir.file("for_ensure"));
  for (const char* name : {"for_write", "for_ensure"}) {
    expect_same(
        load_modelnet_h5(Split::kTest, ModelNetH5Options().root(dir.file(name)).load_normals(true)),
        generate_synthetic_shapes(Split::kTest, small()));
  }
  EXPECT_EQ(entries_of(dir.path()), (std::vector<std::string>{"for_ensure", "for_write"}));
}

TEST(SyntheticShapes, EnsureReusesADatasetOfTheSameOptions) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string root = dir.file("shapes");
  EXPECT_EQ(ensure_synthetic_shapes(root, small()), root);
  const auto written = fs::last_write_time(fs::path(root) / "ply_data_train0.h5");
  EXPECT_EQ(ensure_synthetic_shapes(root, small()), root);
  EXPECT_EQ(fs::last_write_time(fs::path(root) / "ply_data_train0.h5"), written);
  EXPECT_EQ(entries_of(dir.path()), std::vector<std::string>{"shapes"});
}

TEST(SyntheticShapes, EnsureNamesTheOptionThatDiffers) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string root = dir.file("shapes");
  ensure_synthetic_shapes(root, small());
  expect_error([&] { ensure_synthetic_shapes(root, small().seed(8)); },
               "ensure_synthetic_shapes: '" + root +
                   "' holds synthetic shapes generated with seed=7 (see its "
                   "synthetic_shapes.txt) but seed=8 was asked for; nothing in it was changed: "
                   "name a new or empty directory for the dataset");
  expect_error([&] { ensure_synthetic_shapes(root, small().points_per_cloud(32)); },
               "points_per_cloud=64 (see its synthetic_shapes.txt) but points_per_cloud=32");
}

TEST(SyntheticShapes, EnsureRefusesADirectoryThatIsNotADataset) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  std::ofstream(dir.file("notes.txt")) << "mine";
  expect_error([&] { ensure_synthetic_shapes(dir.path().string(), small()); },
               "'" + dir.path().string() +
                   "' exists but has no synthetic_shapes.txt, so it is not a dataset written by "
                   "write_synthetic_shapes; nothing in it was changed: name a new or empty "
                   "directory for the dataset");
  EXPECT_EQ(entries_of(dir.path()), std::vector<std::string>{"notes.txt"});
}

// Every caller gets the root, which holds one complete dataset, and no
// caller's temporary directory is left beside it.
void expect_one_dataset(const TempDir& dir, const std::string& root) {
  EXPECT_EQ(entries_of(dir.path()), std::vector<std::string>{"shapes"});
  expect_same(load_modelnet_h5(Split::kTrain, ModelNetH5Options().root(root).load_normals(true)),
              generate_synthetic_shapes(Split::kTrain, small()));
}

TEST(SyntheticShapes, ConcurrentEnsureFromThreadsWritesOneDataset) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string root = dir.file("shapes");
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = ensure_synthetic_shapes(root, small()); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(results, std::vector<std::string>(results.size(), root));
  expect_one_dataset(dir, root);
}

TEST(SyntheticShapes, ConcurrentEnsureFromProcessesWritesOneDataset) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string root = dir.file("shapes");
  const std::vector<int> codes = dtrain::testing::run_ranks(
      3, [&](int) { EXPECT_EQ(ensure_synthetic_shapes(root, small()), root); });
  EXPECT_EQ(codes, std::vector<int>(3, 0));
  expect_one_dataset(dir, root);
}

// The generator's sin, cos and log against libm's, to within a few ulps.
TEST(SyntheticShapesMath, PortableFunctionsMatchLibm) {
  namespace portable = dtrain::datasets::portable;
  for (double x = -20.0; x <= 20.0; x += 0.0137) {
    const auto sc = portable::sin_cos(x);
    EXPECT_NEAR(sc.sin, std::sin(x), 4e-16) << x;
    EXPECT_NEAR(sc.cos, std::cos(x), 4e-16) << x;
  }
  for (double x : {1e-300, 1e-9, 0.3, 0.7071, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300}) {
    EXPECT_NEAR(portable::log(x), std::log(x), 4e-16 * std::max(1.0, std::abs(std::log(x)))) << x;
  }
  EXPECT_EQ(portable::log(1.0), 0.0);
}

}  // namespace

// dtrain::datasets::load_modelnet_h5 on small files in ModelNet40's HDF5
// layout, and on the real files when DTRAIN_MODELNET_DIR names them.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "dtrain/datasets/point_clouds.h"
#include "expect_error.h"
#include "hdf5_testing.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using dtrain::datasets::load_modelnet_h5;
using dtrain::datasets::ModelNetH5Options;
using dtrain::datasets::Split;
using dtrain::testing::clouds;
using dtrain::testing::expect_error;
using dtrain::testing::TempDir;
using dtrain::testing::write_h5;
using dtrain::testing::write_text;

// Labels as ModelNet stores them: uint8 of shape (n, 1).
at::Tensor labels(std::vector<uint8_t> values) {
  return at::tensor(at::ArrayRef<uint8_t>(values), at::kByte).reshape({-1, 1});
}

// A ModelNet-like directory: `classes` names, and the lists naming files
// with the published prefix "data/modelnet40_ply_hdf5_2048/".
class ModelNetDir {
 public:
  explicit ModelNetDir(int classes = 4) {
    std::string names;
    for (int i = 0; i < classes; ++i) {
      names += "class" + std::to_string(i) + "\n";
    }
    write_text(dir_.path() / "shape_names.txt", names);
  }
  const fs::path& root() const { return dir_.path(); }
  std::string file(const std::string& name) const { return dir_.file(name); }
  void list(Split split, const std::vector<std::string>& files) const {
    std::string text;
    for (const std::string& f : files) {
      text += "data/modelnet40_ply_hdf5_2048/" + f + "\n";
    }
    write_text(root() / (split == Split::kTrain ? "train_files.txt" : "test_files.txt"), text);
  }
  ModelNetH5Options options() const { return ModelNetH5Options().root(root().string()); }

 private:
  TempDir dir_;
};

TEST(ModelnetH5, ConcatenatesTheListedFilesInOrder) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  write_h5(dir.file("ply_data_train0.h5"), {{"data", clouds(3, 8)}, {"label", labels({2, 0, 1})}});
  write_h5(dir.file("ply_data_train1.h5"),
           {{"data", clouds(2, 8, 100)}, {"label", labels({3, 3})}});
  dir.list(Split::kTrain, {"ply_data_train1.h5", "ply_data_train0.h5"});

  const auto data = load_modelnet_h5(Split::kTrain, dir.options());
  ASSERT_EQ(data.size(), 5);
  EXPECT_TRUE(at::equal(data.points, at::cat({clouds(2, 8, 100), clouds(3, 8)})));
  EXPECT_TRUE(at::equal(data.labels, at::tensor({3, 3, 2, 0, 1}, at::kLong)));
  EXPECT_FALSE(data.normals.defined());
  EXPECT_EQ(data.class_names, (std::vector<std::string>{"class0", "class1", "class2", "class3"}));
}

TEST(ModelnetH5, FindsFilesRelativeToTheRoot) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  fs::create_directory(dir.root() / "parts");
  write_h5(dir.root() / "parts" / "a.h5", {{"data", clouds(1, 4)}, {"label", labels({1})}});
  write_text(dir.root() / "test_files.txt", "parts/a.h5\r\n\n");  // CRLF and a blank line
  EXPECT_EQ(load_modelnet_h5(Split::kTest, dir.options()).size(), 1);
}

TEST(ModelnetH5, AcceptsLabelsOfShapeNAndOtherIntegerTypes) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  write_h5(dir.file("t.h5"), {{"data", clouds(2, 4)}, {"label", at::tensor({3, 1}, at::kLong)}});
  dir.list(Split::kTest, {"t.h5"});
  EXPECT_TRUE(at::equal(load_modelnet_h5(Split::kTest, dir.options()).labels,
                        at::tensor({3, 1}, at::kLong)));
}

TEST(ModelnetH5, NumPointsKeepsTheFirstPointsOfEachCloud) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  const at::Tensor points = clouds(2, 8);
  const at::Tensor normals = clouds(2, 8, 0.5f);
  write_h5(dir.file("t.h5"), {{"data", points}, {"label", labels({0, 1})}, {"normal", normals}});
  dir.list(Split::kTest, {"t.h5"});
  const auto data = load_modelnet_h5(Split::kTest, dir.options().num_points(5).load_normals(true));
  EXPECT_EQ(data.points.sizes(), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_TRUE(at::equal(data.points, points.narrow(1, 0, 5)));
  EXPECT_TRUE(at::equal(data.normals, normals.narrow(1, 0, 5)));
  EXPECT_TRUE(data.points.is_contiguous());

  EXPECT_EQ(load_modelnet_h5(Split::kTest, dir.options().num_points(8)).points.size(1), 8);
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options().num_points(9)); },
               "num_points is 9 but '" + dir.file("t.h5") + "' holds clouds of 8 points");
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options().num_points(-1)); },
               "num_points must be 0 (all) or positive, got -1");
}

TEST(ModelnetH5, MissingNormalsAreNamedWhenAskedFor) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  write_h5(dir.file("t.h5"), {{"data", clouds(1, 4)}, {"label", labels({0})}});
  dir.list(Split::kTest, {"t.h5"});
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options().load_normals(true)); },
               "'" + dir.file("t.h5") + "' has no dataset 'normal' (load_normals is set)");
}

TEST(ModelnetH5, NoRootAsksForOne) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  expect_error([] { load_modelnet_h5(Split::kTrain, ModelNetH5Options().root("")); },
               "load_modelnet_h5: no directory given");
}

TEST(ModelnetH5, MissingDirectoryIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  expect_error([] { load_modelnet_h5(Split::kTrain, ModelNetH5Options().root("/no/such/dir")); },
               "ModelNet HDF5 directory '/no/such/dir' does not exist");
}

TEST(ModelnetH5, MissingListIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  expect_error([&] { load_modelnet_h5(Split::kTrain, dir.options()); },
               "'" + dir.file("train_files.txt") + "' (the list of training files) does not exist");
}

TEST(ModelnetH5, MissingListedFileIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  dir.list(Split::kTest, {"ply_data_test0.h5"});
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options()); },
               "'" + dir.file("test_files.txt") +
                   "' lists 'data/modelnet40_ply_hdf5_2048/ply_data_test0.h5', but neither");
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options()); },
               "nor '" + dir.file("ply_data_test0.h5") + "' exists");
}

TEST(ModelnetH5, DataOfTheWrongRankIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  write_h5(dir.file("t.h5"), {{"data", at::zeros({2, 12})}, {"label", labels({0, 1})}});
  dir.list(Split::kTest, {"t.h5"});
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options()); },
               "'" + dir.file("t.h5") + "': dataset 'data' must have shape (N, P, 3), got [2, 12]");
}

TEST(ModelnetH5, LabelCountMismatchIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  write_h5(dir.file("t.h5"), {{"data", clouds(3, 4)}, {"label", labels({0, 1})}});
  dir.list(Split::kTest, {"t.h5"});
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options()); },
               "'" + dir.file("t.h5") + "' holds 3 clouds in 'data' but 2 labels in 'label'");
}

TEST(ModelnetH5, LabelOutOfRangeNamesTheFile) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir(4);
  write_h5(dir.file("good.h5"), {{"data", clouds(1, 4)}, {"label", labels({3})}});
  write_h5(dir.file("bad.h5"), {{"data", clouds(2, 4)}, {"label", labels({1, 4})}});
  dir.list(Split::kTest, {"good.h5", "bad.h5"});
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options()); },
               "'" + dir.file("bad.h5") + "' holds label 4, but '" + dir.file("shape_names.txt") +
                   "' names 4 classes (0 to 3)");
}

TEST(ModelnetH5, CloudSizesMustAgreeAcrossFiles) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ModelNetDir dir;
  write_h5(dir.file("a.h5"), {{"data", clouds(1, 8)}, {"label", labels({0})}});
  write_h5(dir.file("b.h5"), {{"data", clouds(1, 4)}, {"label", labels({0})}});
  dir.list(Split::kTest, {"a.h5", "b.h5"});
  expect_error([&] { load_modelnet_h5(Split::kTest, dir.options()); },
               "'" + dir.file("b.h5") + "' holds clouds of 4 points but '" + dir.file("a.h5") +
                   "' holds clouds of 8");
}

TEST(ModelnetH5, RealModelNet40) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  const std::string root = dtrain::datasets::modelnet_default_root();
  if (root.empty() || !fs::exists(fs::path(root) / "test_files.txt")) {
    GTEST_SKIP() << "set DTRAIN_MODELNET_DIR to the unpacked modelnet40_ply_hdf5_2048 directory";
  }
  const auto test = load_modelnet_h5(Split::kTest, ModelNetH5Options().num_points(1024));
  EXPECT_EQ(test.class_names.size(), 40u);
  EXPECT_EQ(test.points.size(1), 1024);
  EXPECT_EQ(test.points.size(2), 3);
  EXPECT_GE(test.labels.min().item<int64_t>(), 0);
  EXPECT_LT(test.labels.max().item<int64_t>(), 40);
}

}  // namespace

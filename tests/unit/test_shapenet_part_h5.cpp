// dtrain::datasets::load_shapenet_part_h5 on small files in ShapeNet-Part's
// HDF5 layout, and on the real files when DTRAIN_SHAPENET_PART_DIR names them.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "dtrain/datasets/shapenet_part.h"
#include "expect_error.h"
#include "hdf5_testing.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using dtrain::datasets::load_shapenet_part_h5;
using dtrain::datasets::ShapeNetPartH5Options;
using dtrain::datasets::Split;
using dtrain::testing::clouds;
using dtrain::testing::expect_error;
using dtrain::testing::TempDir;
using dtrain::testing::write_h5;
using dtrain::testing::write_text;

// A file as published: uint8 category (n, 1) and uint8 parts (n, P).
void write_part_file(const fs::path& path, int64_t n, int64_t points, int64_t category,
                     float first = 0.0f) {
  write_h5(path, {{"data", clouds(n, points, first)},
                  {"label", at::full({n, 1}, category, at::kByte)},
                  {"pid", (at::arange(n * points) % 7).reshape({n, points}).to(at::kByte)}});
}

class ShapeNetPartDir {
 public:
  ShapeNetPartDir() {
    write_text(dir_.path() / "all_object_categories.txt", "Airplane\t02691156\nBag\t02773838\n");
  }
  std::string file(const std::string& name) const { return dir_.file(name); }
  void list(const std::string& name, const std::string& files) const {
    write_text(dir_.path() / name, files);
  }
  ShapeNetPartH5Options options() const {
    return ShapeNetPartH5Options().root(dir_.path().string());
  }

 private:
  TempDir dir_;
};

TEST(ShapeNetPartH5, TrainingReadsTrainingAndValidationFiles) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ShapeNetPartDir dir;
  write_part_file(dir.file("ply_data_train0.h5"), 3, 8, 1);
  write_part_file(dir.file("ply_data_val0.h5"), 2, 8, 0, 500);
  write_part_file(dir.file("ply_data_test0.h5"), 1, 8, 1, 900);
  // Published lists hold paths from another checkout: found by file name.
  dir.list("train_hdf5_file_list.txt", "hdf5_data/ply_data_train0.h5\n");
  dir.list("val_hdf5_file_list.txt", "hdf5_data/ply_data_val0.h5\n");
  dir.list("test_hdf5_file_list.txt", "ply_data_test0.h5\n");

  const auto train = load_shapenet_part_h5(Split::kTrain, dir.options());
  ASSERT_EQ(train.size(), 5);
  EXPECT_EQ(train.category_names, (std::vector<std::string>{"Airplane", "Bag"}));
  EXPECT_TRUE(at::equal(train.points, at::cat({clouds(3, 8), clouds(2, 8, 500)})));
  EXPECT_TRUE(at::equal(train.categories, at::tensor({1, 1, 1, 0, 0}, at::kLong)));
  EXPECT_EQ(train.parts.sizes(), (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(train.parts.scalar_type(), at::kLong);
  EXPECT_EQ(train.parts[0][6].item<int64_t>(), 6);

  EXPECT_EQ(load_shapenet_part_h5(Split::kTrain, dir.options().train_with_val(false)).size(), 3);
  const auto test = load_shapenet_part_h5(Split::kTest, dir.options().num_points(5));
  ASSERT_EQ(test.size(), 1);
  EXPECT_TRUE(at::equal(test.points, clouds(1, 8, 900).narrow(1, 0, 5)));
  EXPECT_EQ(test.parts.sizes(), (std::vector<int64_t>{1, 5}));
}

TEST(ShapeNetPartH5, ErrorsNameTheFileAndWhatWasWrong) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  ShapeNetPartDir dir;
  dir.list("test_hdf5_file_list.txt", "bad.h5\n");

  write_part_file(dir.file("bad.h5"), 2, 8, 2);
  expect_error([&] { load_shapenet_part_h5(Split::kTest, dir.options()); },
               "'" + dir.file("bad.h5") + "' holds category 2, but '" +
                   dir.file("all_object_categories.txt") + "' names 2 categories (0 to 1)");

  fs::remove(dir.file("bad.h5"));
  write_h5(dir.file("bad.h5"), {{"data", clouds(2, 8)},
                                {"label", at::zeros({2, 1}, at::kByte)},
                                {"pid", at::zeros({2, 7}, at::kByte)}});
  expect_error([&] { load_shapenet_part_h5(Split::kTest, dir.options()); },
               "dataset 'pid' must have shape (2, 8), one part per point of 'data', got [2, 7]");

  fs::remove(dir.file("bad.h5"));
  write_part_file(dir.file("bad.h5"), 2, 8, 0);
  expect_error([&] { load_shapenet_part_h5(Split::kTest, dir.options().num_parts(5)); },
               "holds part labels outside [0, 5) (num_parts)");
  expect_error([&] { load_shapenet_part_h5(Split::kTest, dir.options().num_points(9)); },
               "num_points is 9 but '" + dir.file("bad.h5") + "' holds clouds of 8 points");
  expect_error([&] { load_shapenet_part_h5(Split::kTrain, dir.options()); },
               "train_hdf5_file_list.txt");
  expect_error([] { load_shapenet_part_h5(Split::kTest, ShapeNetPartH5Options().root("")); },
               "DTRAIN_SHAPENET_PART_DIR");
}

TEST(ShapeNetPartH5, RealShapeNetPart) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  if (dtrain::datasets::shapenet_part_default_root().empty()) {
    GTEST_SKIP() << "DTRAIN_SHAPENET_PART_DIR is not set (the unpacked "
                    "shapenet_part_seg_hdf5_data)";
  }
  const auto test = load_shapenet_part_h5(Split::kTest);
  EXPECT_EQ(test.category_names.size(), 16u);
  EXPECT_EQ(test.points.size(2), 3);
  EXPECT_LT(test.parts.max().item<int64_t>(), 50);
}

}  // namespace

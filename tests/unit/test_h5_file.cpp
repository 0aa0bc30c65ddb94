// dtrain's HDF5 wrapper (datasets/src/h5_file.h): tensors in and out, and
// errors that name the file and the dataset.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dtrain/datasets/point_clouds.h"
#include "dtrain/datasets/synthetic_shapes.h"
#include "expect_error.h"
#include "hdf5_testing.h"
#include "test_support.h"

namespace {

using dtrain::datasets::H5File;
using dtrain::testing::expect_error;
using dtrain::testing::TempDir;
using dtrain::testing::write_h5;

TEST(Hdf5File, RoundTripsFloatByteAndLongTensors) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const at::Tensor floats = at::randn({2, 3, 4});
  const at::Tensor bytes = at::arange(5, at::kByte).reshape({5, 1});
  const at::Tensor longs = at::tensor({int64_t{-3}, int64_t{0}, int64_t{1} << 40});
  write_h5(dir.file("a.h5"), {{"floats", floats}, {"bytes", bytes}, {"longs", longs}});

  H5File file(dir.file("a.h5"), H5File::Mode::kRead);
  EXPECT_TRUE(file.has("floats"));
  EXPECT_FALSE(file.has("nothing"));
  EXPECT_EQ(file.shape("floats"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(file.shape("bytes"), (std::vector<int64_t>{5, 1}));
  EXPECT_TRUE(at::equal(file.read("floats", at::kFloat), floats));
  EXPECT_TRUE(at::equal(file.read("bytes", at::kByte), bytes));
  EXPECT_TRUE(at::equal(file.read("longs", at::kLong), longs));
  // HDF5 converts integer types on reading: ModelNet's uint8 labels come out as int64.
  EXPECT_TRUE(at::equal(file.read("bytes", at::kLong), bytes.to(at::kLong)));
}

TEST(Hdf5File, WritesNonContiguousTensorsAsTheirValues) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const at::Tensor transposed = at::arange(6, at::kFloat).reshape({2, 3}).t();
  write_h5(dir.file("t.h5"), {{"t", transposed}});
  EXPECT_TRUE(
      at::equal(H5File(dir.file("t.h5"), H5File::Mode::kRead).read("t", at::kFloat), transposed));
}

TEST(Hdf5File, MissingFileIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  expect_error([&] { H5File(dir.file("none.h5"), H5File::Mode::kRead); },
               "cannot open HDF5 file '" + dir.file("none.h5") + "'");
}

TEST(Hdf5File, NotAnHdf5FileIsNamed) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  dtrain::testing::write_file(dir.file("text.h5"), {'h', 'i', '\n'});
  expect_error([&] { H5File(dir.file("text.h5"), H5File::Mode::kRead); },
               "cannot open HDF5 file '" + dir.file("text.h5") + "'");
}

TEST(Hdf5File, CreateRefusesAnExistingFile) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_h5(dir.file("a.h5"), {{"x", at::ones({1})}});
  expect_error([&] { H5File(dir.file("a.h5"), H5File::Mode::kCreate); },
               "cannot create HDF5 file '" + dir.file("a.h5") + "' (it must not exist yet)");
}

TEST(Hdf5File, MissingDatasetNamesFileAndDataset) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_h5(dir.file("a.h5"), {{"x", at::ones({1})}});
  const H5File file(dir.file("a.h5"), H5File::Mode::kRead);
  expect_error([&] { file.read("label", at::kLong); },
               "HDF5 file '" + dir.file("a.h5") + "' has no dataset 'label'");
  expect_error([&] { file.shape("label"); }, "has no dataset 'label'");
}

TEST(Hdf5File, FloatsAreNotReadAsIntegersNorTheReverse) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_h5(dir.file("a.h5"), {{"x", at::ones({2})}, {"n", at::ones({2}, at::kLong)}});
  const H5File file(dir.file("a.h5"), H5File::Mode::kRead);
  expect_error([&] { file.read("x", at::kLong); },
               "dataset 'x' of HDF5 file '" + dir.file("a.h5") +
                   "' must hold integers, not floating-point numbers");
  expect_error([&] { file.read("n", at::kFloat); },
               "must hold floating-point numbers, not integers");
}

TEST(Hdf5File, WriteRefusesOtherDtypesAndExistingNames) {
  DTRAIN_SKIP_WITHOUT_HDF5();
  TempDir dir;
  H5File file(dir.file("a.h5"), H5File::Mode::kCreate);
  expect_error([&] { file.write("d", at::ones({2}, at::kDouble)); },
               "dtype must be float32, uint8 or int64, got Double");
  file.write("x", at::ones({2}));
  expect_error([&] { file.write("x", at::ones({2})); }, "cannot create dataset 'x' in HDF5 file");
}

TEST(Hdf5File, BuildWithoutHdf5SaysSo) {
  if (DTRAIN_WITH_HDF5) {
    GTEST_SKIP() << "this build has HDF5; the error is for builds without it";
  }
  TempDir dir;
  expect_error(
      [&] {
        dtrain::datasets::load_modelnet_h5(dtrain::datasets::Split::kTrain,
                                           dtrain::datasets::ModelNetH5Options().root(dir.path()));
      },
      "load_modelnet_h5: this build of dtrain has no HDF5");
  expect_error([&] { dtrain::datasets::write_synthetic_shapes(dir.file("s")); },
               "write_synthetic_shapes: this build of dtrain has no HDF5");
}

}  // namespace

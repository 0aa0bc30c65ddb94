// Cloud files a user has (dtrain/datasets/point_cloud_file.h) and their
// preparation for a trained classifier (dtrain/models/pointnet2_classifier.h).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <ATen/ATen.h>
#include <torch/optim/sgd.h>

#include "dtrain/datasets/point_cloud_file.h"
#include "dtrain/models/pointnet2_classifier.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "test_support.h"

namespace {

using dtrain::testing::expect_error;
using dtrain::testing::TempDir;
namespace ds = dtrain::datasets;

std::string written(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(PointCloudFile, TextTakesSpacesCommasAndNormals) {
  TempDir dir;
  const at::Tensor xyz =
      ds::read_point_cloud_file(written(dir, "a.txt", "# x y z\n1 2 3\r\n\n4\t5  6\n"));
  EXPECT_TRUE(at::equal(xyz, at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3})));
  // modelnet40_normal_resampled: x,y,z,nx,ny,nz
  const at::Tensor normals =
      ds::read_point_cloud_file(written(dir, "b.txt", "0.5,0,-1,0,0,1\n1e-1,2,3,1,0,0\n"));
  EXPECT_EQ(normals.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_FLOAT_EQ(normals[1][0].item<float>(), 0.1f);
  EXPECT_FLOAT_EQ(normals[0][5].item<float>(), 1.f);
}

TEST(PointCloudFile, PlyAsciiAndBinaryOfBothOrders) {
  TempDir dir;
  const std::string header_end =
      "element face 1\nproperty list uchar int vertex_indices\nend_header\n";
  const at::Tensor ascii = ds::read_point_cloud_file(written(
      dir, "a.ply",
      "ply\nformat ascii 1.0\ncomment test\nelement vertex 2\nproperty float x\nproperty float "
      "y\nproperty float z\nproperty float nx\nproperty float ny\nproperty float nz\n" +
          header_end + "1 2 3 0 0 1\n4 5 6 1 0 0\n3 0 1 0\n"));
  EXPECT_TRUE(
      at::equal(ascii.narrow(1, 0, 3), at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3})));
  EXPECT_EQ(ascii.size(1), 6);
  // short x, big-endian; a uchar between; y and z as double
  std::string big =
      "ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty short x\n"
      "property uchar red\nproperty double y\nproperty double z\n" +
      header_end;
  big += std::string("\xff\xfe", 2) + "\x07";  // -2, then red 7
  for (const double value : {0.5, -8.0}) {
    char bytes[8];
    std::memcpy(bytes, &value, 8);
    big += std::string(std::rbegin(bytes), std::rend(bytes));
  }
  const at::Tensor binary = ds::read_point_cloud_file(written(dir, "b.ply", big));
  EXPECT_TRUE(at::equal(binary, at::tensor({-2.f, 0.5f, -8.f}).view({1, 3})));
  std::string little =
      "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float "
      "x\nproperty float y\nproperty float z\nend_header\n";
  for (const float value : {1.5f, 2.5f, 3.5f}) {
    little += std::string(reinterpret_cast<const char*>(&value), 4);
  }
  EXPECT_TRUE(at::equal(ds::read_point_cloud_file(written(dir, "c.ply", little)),
                        at::tensor({1.5f, 2.5f, 3.5f}).view({1, 3})));
  expect_error<dtrain::IOError>(
      [&] {
        ds::read_point_cloud_file(written(dir, "d.ply", little.substr(0, little.size() - 2)));
      },
      "ends after 0 of the 1 vertices");
}

TEST(PointCloudFile, BadFilesAreNamed) {
  TempDir dir;
  const std::string ply = "ply\nformat ascii 1.0\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "holds no points"},
      {"1 2 inf\n", "point 1 has a value that is not a finite number (inf)"},
      {"1 2 3 4 5 6\n1 2 3\n", "line 2 has 3 columns; line 1 has 6"},
      {"1;2;3\n", "line 1 has 1 column(s)"},
      {ply + "element face 1\nproperty list uchar int i\nelement vertex 1\nend_header\n",
       "element 'face' comes before 'vertex'"},
      {ply + "element vertex 1\nproperty list uchar int x\nend_header\n",
       "the vertex element has a list property"},
      {ply + "element vertex 1\nproperty float128 x\nend_header\n",
       "cannot read 'property float128 x'"},
      {"ply\nelement vertex 1\nend_header\n", "broken PLY header: no format line"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = written(dir, "bad" + std::to_string(i), cases[i].first);
    expect_error<dtrain::IOError>([&] { ds::read_point_cloud_file(path); }, "'" + path + "'");
    expect_error<dtrain::IOError>([&] { ds::read_point_cloud_file(path); }, cases[i].second);
  }
}

// A classifier of 64-point clouds without normals, untrained.
dtrain::models::PointNet2Classifier small_classifier(const TempDir& dir) {
  dtrain::models::PointNet2Cls model(dtrain::models::pointnet2_cls_preset("ssg-lite", 2));
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = dir.file("model.pt");
  dtrain::train::save_checkpoint(
      path, *model, sgd,
      dtrain::train::TrainingProgress{
          .epochs_done = 1,
          .notes = dtrain::models::pointnet2_cls_notes({"ssg-lite", {"a", "b"}, 256, false})});
  return dtrain::models::PointNet2Classifier::load(path, torch::kCPU);
}

// Centred and scaled into the unit sphere, then cut by furthest point
// sampling, padded by repeats, or kept as it is at the model's count.
TEST(PointNet2Classifier, PreparesCloudsAsTheTrainingDataWas) {
  TempDir dir;
  const auto classifier = small_classifier(dir);
  const at::Tensor cloud = at::rand({256, 3}) * 7 + 3;
  const at::Tensor same = classifier.prepare(cloud);
  const at::Tensor centred = cloud - cloud.mean(0, true);
  EXPECT_TRUE(at::allclose(same, centred / centred.norm(2, 1).max(), 1e-5, 1e-6));
  EXPECT_NEAR(same.norm(2, 1).max().item<double>(), 1.0, 1e-6);
  const at::Tensor cut = classifier.prepare(at::rand({1000, 6}));
  EXPECT_EQ(cut.sizes(), (std::vector<int64_t>{256, 3}));
  EXPECT_EQ(std::get<0>(at::_unique(cut.select(1, 0))).size(0), 256) << "a point was repeated";
  const at::Tensor padded = classifier.prepare(at::rand({10, 3}));
  EXPECT_TRUE(at::equal(padded.narrow(0, 0, 10), padded.narrow(0, 10, 10)));
  expect_error<dtrain::Error>([&] { classifier.prepare(at::rand({10, 2})); }, "(points, 3 or 6)");
}

}  // namespace

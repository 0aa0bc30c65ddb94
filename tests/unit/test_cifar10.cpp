// dtrain::datasets::load_cifar10 on small batch files written here (every
// pixel, channel order, normalisation, the order of the training files, the
// class names, every error), and on the real files when DTRAIN_CIFAR10_DIR
// names them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/datasets/cifar10.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "test_support.h"

namespace {

using dtrain::datasets::Cifar10Options;
using dtrain::datasets::load_cifar10;
using dtrain::datasets::Split;
using dtrain::testing::expect_error;
using dtrain::testing::ScopedEnv;
using dtrain::testing::TempDir;
using dtrain::testing::write_file;

// Pixel (c, y, x) of the record numbered `record`: tells records, channels,
// rows and columns apart (no symmetry between y and x).
int pattern(int record, int c, int y, int x) {
  return (record * 41 + c * 80 + y * 7 + x * 3) % 256;
}

void append_record(std::vector<unsigned char>& bytes, int label, int record) {
  bytes.push_back(static_cast<unsigned char>(label));
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        bytes.push_back(static_cast<unsigned char>(pattern(record, c, y, x)));
      }
    }
  }
}

// Writes `name` holding one record per label; the k-th has pattern(first + k).
void write_batch(const TempDir& dir, const std::string& name, const std::vector<int>& labels,
                 int first = 0) {
  std::vector<unsigned char> bytes;
  for (std::size_t k = 0; k < labels.size(); ++k) {
    append_record(bytes, labels[k], first + static_cast<int>(k));
  }
  write_file(dir.file(name), bytes);
}

// What records first .. first + count - 1 must load as, computed in double.
at::Tensor expected_images(int first, int count) {
  at::Tensor out = at::empty({count, 3, 32, 32}, at::kDouble);
  auto a = out.accessor<double, 4>();
  for (int n = 0; n < count; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          a[n][c][y][x] = (pattern(first + n, c, y, x) / 255.0 - 0.5) / 0.5;
        }
      }
    }
  }
  return out;
}

std::vector<int64_t> labels_of(const dtrain::datasets::LabeledImages& data) {
  const at::Tensor labels = data.labels.contiguous();
  return {labels.data_ptr<int64_t>(), labels.data_ptr<int64_t>() + labels.numel()};
}

void write_all_batches(const TempDir& dir) {
  for (int i = 1; i <= 5; ++i) {
    write_batch(dir, "data_batch_" + std::to_string(i) + ".bin", {i});
  }
  write_batch(dir, "test_batch.bin", {0});
}

TEST(Cifar10, TestSplitRoundTrip) {
  TempDir dir;
  write_batch(dir, "test_batch.bin", {3, 0, 9});
  const auto data = load_cifar10(Split::kTest, Cifar10Options().root(dir.path()));
  ASSERT_EQ(data.size(), 3);
  EXPECT_EQ(data.images.sizes(), (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(data.images.scalar_type(), at::kFloat);
  EXPECT_TRUE(data.images.is_contiguous());
  EXPECT_EQ(data.labels.scalar_type(), at::kLong);
  EXPECT_EQ(labels_of(data), (std::vector<int64_t>{3, 0, 9}));
  EXPECT_TRUE(at::allclose(data.images.to(at::kDouble), expected_images(0, 3), 0, 1e-6));
  EXPECT_EQ(data.class_names, dtrain::datasets::cifar10_standard_class_names());
}

TEST(Cifar10, ChannelsAreRedGreenBlueScaledToMinusOneOne) {
  TempDir dir;
  std::vector<unsigned char> bytes = {4};
  bytes.insert(bytes.end(), 1024, 255);  // red
  bytes.insert(bytes.end(), 1024, 0);    // green
  bytes.insert(bytes.end(), 1024, 51);   // blue
  write_file(dir.file("test_batch.bin"), bytes);
  const at::Tensor image = load_cifar10(Split::kTest, Cifar10Options().root(dir.path())).images[0];
  // (x / 255 - 0.5) / 0.5, as ToTensor() then Normalize((0.5,) * 3, (0.5,) * 3).
  const std::vector<std::pair<int, float>> planes = {{0, 1.0f}, {1, -1.0f}, {2, -0.6f}};
  for (const auto& [channel, value] : planes) {
    EXPECT_FLOAT_EQ(image[channel].min().item<float>(), value) << "channel " << channel;
    EXPECT_FLOAT_EQ(image[channel].max().item<float>(), value) << "channel " << channel;
  }
}

TEST(Cifar10, TrainingIsTheFiveBatchesInOrder) {
  TempDir dir;
  // 2 + 1 + 3 + 1 + 2 records; record g is labelled g % 10.
  const std::vector<std::vector<int>> files = {{0, 1}, {2}, {3, 4, 5}, {6}, {7, 8}};
  int first = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    write_batch(dir, "data_batch_" + std::to_string(i + 1) + ".bin", files[i], first);
    first += static_cast<int>(files[i].size());
  }
  write_batch(dir, "test_batch.bin", {9}, /*first=*/100);

  const auto train = load_cifar10(Split::kTrain, Cifar10Options().root(dir.path()));
  EXPECT_EQ(labels_of(train), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(at::allclose(train.images.to(at::kDouble), expected_images(0, 9), 0, 1e-6));

  const auto test = load_cifar10(Split::kTest, Cifar10Options().root(dir.path()));
  EXPECT_EQ(labels_of(test), (std::vector<int64_t>{9}));
  EXPECT_TRUE(at::allclose(test.images.to(at::kDouble), expected_images(100, 1), 0, 1e-6));
}

TEST(Cifar10, ClassNamesFromMetaFile) {
  TempDir dir;
  write_batch(dir, "test_batch.bin", {1});
  const std::string names =
      "a0\nb1\nc2\nd3\ne4\nf5\ng6\nh7\ni8\nj9\n\n";  // as published: a blank line
  write_file(dir.file("batches.meta.txt"), {names.begin(), names.end()});
  const auto data = load_cifar10(Split::kTest, Cifar10Options().root(dir.path()));
  EXPECT_EQ(data.class_names,
            (std::vector<std::string>{"a0", "b1", "c2", "d3", "e4", "f5", "g6", "h7", "i8", "j9"}));
}

TEST(Cifar10, StandardNames) {
  const auto& names = dtrain::datasets::cifar10_standard_class_names();
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names.front(), "airplane");
  EXPECT_EQ(names[3], "cat");
  EXPECT_EQ(names.back(), "truck");
}

TEST(Cifar10, InstalledNeedsAllSixFiles) {
  TempDir dir;
  EXPECT_FALSE(dtrain::datasets::cifar10_installed(dir.path().string()));
  for (int i = 1; i <= 5; ++i) {
    write_batch(dir, "data_batch_" + std::to_string(i) + ".bin", {i});
  }
  EXPECT_FALSE(dtrain::datasets::cifar10_installed(dir.path().string())) << "no test_batch.bin";
  write_batch(dir, "test_batch.bin", {0});
  EXPECT_TRUE(dtrain::datasets::cifar10_installed(dir.path().string()));
  EXPECT_FALSE(dtrain::datasets::cifar10_installed(""));
}

TEST(Cifar10, DefaultRootIsTheEnvironmentVariable) {
  {
    ScopedEnv env("DTRAIN_CIFAR10_DIR", "/data/cifar-10-batches-bin");
    EXPECT_EQ(dtrain::datasets::cifar10_default_root(), "/data/cifar-10-batches-bin");
    EXPECT_EQ(Cifar10Options().root(), "/data/cifar-10-batches-bin");
  }
  ScopedEnv env("DTRAIN_CIFAR10_DIR", nullptr);
  EXPECT_EQ(dtrain::datasets::cifar10_default_root(), "");
  expect_error<dtrain::IOError>(
      [] { load_cifar10(Split::kTrain); },
      "load_cifar10: no directory given: pass Cifar10Options().root(...) or set "
      "DTRAIN_CIFAR10_DIR to the directory holding data_batch_1.bin .. data_batch_5.bin and "
      "test_batch.bin");
}

TEST(Cifar10, MissingDirectoryIsNamed) {
  expect_error<dtrain::IOError>(
      [] { load_cifar10(Split::kTest, Cifar10Options().root("/no/such/cifar")); },
      "CIFAR-10 directory '/no/such/cifar' does not exist");
}

TEST(Cifar10, MissingFileIsNamed) {
  TempDir dir;
  write_all_batches(dir);
  std::filesystem::remove(dir.file("data_batch_3.bin"));
  expect_error<dtrain::IOError>(
      [&] { load_cifar10(Split::kTrain, Cifar10Options().root(dir.path())); },
      "CIFAR-10 file 'data_batch_3.bin' not found in '" + dir.path().string() + "'");
  // The test split does not need the training files.
  EXPECT_EQ(load_cifar10(Split::kTest, Cifar10Options().root(dir.path())).size(), 1);
}

TEST(Cifar10, PartialRecordIsRefused) {
  TempDir dir;
  std::vector<unsigned char> bytes;
  append_record(bytes, 1, 0);
  append_record(bytes, 2, 1);
  bytes.resize(bytes.size() + 5, 0);  // 6151 bytes
  write_file(dir.file("test_batch.bin"), bytes);
  expect_error<dtrain::IOError>(
      [&] { load_cifar10(Split::kTest, Cifar10Options().root(dir.path())); },
      "test_batch.bin' holds 6151 bytes, not a whole number of 3073-byte records (1 label byte "
      "+ 3072 pixel bytes)");
}

TEST(Cifar10, EmptyFileIsRefused) {
  TempDir dir;
  write_file(dir.file("test_batch.bin"), {});
  expect_error<dtrain::IOError>(
      [&] { load_cifar10(Split::kTest, Cifar10Options().root(dir.path())); },
      "CIFAR-10 file '" + dir.file("test_batch.bin") + "' is empty");
}

TEST(Cifar10, LabelAboveNineNamesFileAndRecord) {
  TempDir dir;
  write_all_batches(dir);
  write_batch(dir, "data_batch_2.bin", {1, 9, 10, 0});
  expect_error<dtrain::IOError>(
      [&] { load_cifar10(Split::kTrain, Cifar10Options().root(dir.path())); },
      "CIFAR-10 file '" + dir.file("data_batch_2.bin") +
          "': record 2 (counting from 0) has label 10; CIFAR-10 labels are 0-9");
}

TEST(Cifar10, MetaFileMustNameTenClasses) {
  TempDir dir;
  write_batch(dir, "test_batch.bin", {1});
  const std::string names = "cat\ndog\nbird\n";
  write_file(dir.file("batches.meta.txt"), {names.begin(), names.end()});
  expect_error<dtrain::IOError>(
      [&] { load_cifar10(Split::kTest, Cifar10Options().root(dir.path())); },
      "batches.meta.txt' names 3 classes; CIFAR-10 has 10, one a line");
}

TEST(Cifar10, RealFiles) {
  if (!dtrain::datasets::cifar10_installed()) {
    GTEST_SKIP() << "CIFAR-10 (binary version) not found: set DTRAIN_CIFAR10_DIR to "
                    "cifar-10-batches-bin";
  }
  const auto test = load_cifar10(Split::kTest);
  EXPECT_EQ(test.size(), 10000);
  // The published test set is balanced: 1,000 images of each class.
  const at::Tensor counts = at::bincount(test.labels);
  EXPECT_TRUE(at::equal(counts, at::full({10}, 1000, counts.options())));
  EXPECT_EQ(load_cifar10(Split::kTrain).size(), 50000);
  EXPECT_GE(test.images.min().item<float>(), -1.0f);
  EXPECT_LE(test.images.max().item<float>(), 1.0f);
}

}  // namespace

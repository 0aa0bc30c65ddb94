// dtrain::datasets::load_fashion_mnist on small synthetic IDX files, and on
// Debian's real files when they are installed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>

#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/util/errors.h"
#include "test_support.h"

namespace {

using dtrain::datasets::FashionMnistOptions;
using dtrain::datasets::load_fashion_mnist;
using dtrain::datasets::Split;
using dtrain::testing::idx_bytes_u8;
using dtrain::testing::TempDir;
using dtrain::testing::write_file;

// Writes a tiny test split: n images whose pixels are all (i * 50) and labels i % 10.
void write_split(const TempDir& dir, const std::string& prefix, uint32_t images, uint32_t labels,
                 unsigned char first_label = 0) {
  std::vector<unsigned char> pixels;
  for (uint32_t i = 0; i < images; ++i) {
    pixels.insert(pixels.end(), 28 * 28, static_cast<unsigned char>(i * 50));
  }
  std::vector<unsigned char> label_bytes;
  for (uint32_t i = 0; i < labels; ++i) {
    label_bytes.push_back(static_cast<unsigned char>((first_label + i) % 256));
  }
  write_file(dir.file(prefix + "-images-idx3-ubyte.gz"), idx_bytes_u8({images, 28, 28}, pixels),
             true);
  write_file(dir.file(prefix + "-labels-idx1-ubyte"), idx_bytes_u8({labels}, label_bytes));
}

std::string load_error(const std::string& root, Split split = Split::kTest) {
  try {
    load_fashion_mnist(split, FashionMnistOptions().root(root));
  } catch (const dtrain::IOError& e) {
    return e.what();
  }
  return "no error";
}

TEST(FashionMnist, InstalledNeedsAllFourFiles) {
  TempDir dir;
  EXPECT_FALSE(dtrain::datasets::fashion_mnist_installed(dir.path().string()));
  write_split(dir, "train", 3, 3);
  EXPECT_FALSE(dtrain::datasets::fashion_mnist_installed(dir.path().string()))
      << "the test split is missing";
  write_split(dir, "t10k", 2, 2);
  EXPECT_TRUE(dtrain::datasets::fashion_mnist_installed(dir.path().string()));
}

TEST(FashionMnist, PadsTo32AndNormalises) {
  TempDir dir;
  write_split(dir, "t10k", 3, 3);
  const auto data = load_fashion_mnist(Split::kTest, FashionMnistOptions().root(dir.path()));
  ASSERT_EQ(data.size(), 3);
  EXPECT_EQ(data.images.sizes(), (std::vector<int64_t>{3, 1, 32, 32}));
  EXPECT_EQ(data.labels.scalar_type(), at::kLong);
  EXPECT_EQ(data.labels[2].item<int64_t>(), 2);
  ASSERT_EQ(data.class_names.size(), 10u);
  EXPECT_EQ(data.class_names.front(), "T-shirt/top");
  EXPECT_EQ(data.class_names.back(), "Ankle boot");
  // Image 1 has pixel value 50 -> (50/255 - 0.5) / 0.5 inside, -1 in the 2-pixel border.
  EXPECT_NEAR(data.images[1][0][16][16].item<float>(), 50.0 / 255.0 * 2.0 - 1.0, 1e-6);
  EXPECT_FLOAT_EQ(data.images[1][0][0][0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(data.images[1][0][31][31].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(data.images[0][0][16][16].item<float>(), -1.0f);
}

TEST(FashionMnist, UnpaddedKeeps28) {
  TempDir dir;
  write_split(dir, "train", 2, 2);
  const auto data =
      load_fashion_mnist(Split::kTrain, FashionMnistOptions().root(dir.path()).pad_to_32(false));
  EXPECT_EQ(data.images.sizes(), (std::vector<int64_t>{2, 1, 28, 28}));
}

TEST(FashionMnist, MissingDirectoryIsNamed) {
  EXPECT_NE(load_error("/no/such/fashion-mnist")
                .find("directory '/no/such/fashion-mnist' does not exist"),
            std::string::npos);
}

TEST(FashionMnist, MissingFileIsNamed) {
  TempDir dir;
  write_split(dir, "train", 2, 2);  // no t10k files
  EXPECT_NE(load_error(dir.path())
                .find("'t10k-images-idx3-ubyte' (or 't10k-images-idx3-ubyte.gz') not found"),
            std::string::npos);
}

TEST(FashionMnist, CountMismatchIsNamed) {
  TempDir dir;
  write_split(dir, "t10k", 3, 2);
  EXPECT_NE(load_error(dir.path()).find("has 3 images but"), std::string::npos);
}

TEST(FashionMnist, LabelOutOfRangeIsNamed) {
  TempDir dir;
  write_split(dir, "t10k", 2, 2, /*first_label=*/11);
  EXPECT_NE(load_error(dir.path()).find("holds label 12; Fashion-MNIST labels are 0-9"),
            std::string::npos);
}

TEST(FashionMnist, RealDebianFiles) {
  const std::string root = dtrain::datasets::fashion_mnist_default_root();
  if (!std::filesystem::exists(std::filesystem::path(root) / "t10k-labels-idx1-ubyte.gz") &&
      !std::filesystem::exists(std::filesystem::path(root) / "t10k-labels-idx1-ubyte")) {
    GTEST_SKIP() << "Fashion-MNIST not installed at " << root
                 << " (apt-get install dataset-fashion-mnist)";
  }
  const auto test = load_fashion_mnist(Split::kTest);
  EXPECT_EQ(test.size(), 10000);
  // The published test set is balanced: 1,000 images of each class.
  const at::Tensor counts = at::bincount(test.labels);
  EXPECT_TRUE(at::equal(counts, at::full({10}, 1000, counts.options())));
  EXPECT_GE(test.images.min().item<float>(), -1.0f);
  EXPECT_LE(test.images.max().item<float>(), 1.0f);
}

}  // namespace

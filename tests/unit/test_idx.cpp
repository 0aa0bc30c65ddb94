// dtrain::datasets::read_idx on files written by the test: plain and
// gzipped, every element type, and every way a file can be broken.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>

#include "dtrain/datasets/idx.h"
#include "dtrain/util/errors.h"
#include "test_support.h"

namespace {

using dtrain::testing::idx_bytes_u8;
using dtrain::testing::TempDir;
using dtrain::testing::write_file;

// Expects read_idx(path) to raise an IOError whose message contains `fragment`.
void expect_idx_error(const std::string& path, const std::string& fragment) {
  try {
    dtrain::datasets::read_idx(path);
    FAIL() << "read_idx accepted " << path;
  } catch (const dtrain::IOError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << fragment;
  }
}

std::vector<unsigned char> counting_bytes(size_t n) {
  std::vector<unsigned char> data(n);
  for (size_t i = 0; i < n; ++i) {
    data[i] = static_cast<unsigned char>(i * 7 % 256);
  }
  return data;
}

class IdxPlainAndGzip : public ::testing::TestWithParam<bool> {};

TEST_P(IdxPlainAndGzip, ReadsShapeAndValues) {
  TempDir dir;
  const bool gzip = GetParam();
  const std::string path = dir.file(gzip ? "images.gz" : "images");
  const auto data = counting_bytes(2 * 3 * 4);
  write_file(path, idx_bytes_u8({2, 3, 4}, data), gzip);

  const at::Tensor tensor = dtrain::datasets::read_idx(path);
  EXPECT_EQ(tensor.scalar_type(), at::kByte);
  EXPECT_EQ(tensor.sizes(), (std::vector<int64_t>{2, 3, 4}));
  const auto* values = tensor.const_data_ptr<uint8_t>();
  for (size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(values[i], data[i]) << "element " << i;
  }
}

TEST_P(IdxPlainAndGzip, TruncatedDataNamesTheShortfall) {
  TempDir dir;
  const bool gzip = GetParam();
  const std::string path = dir.file("short");
  auto bytes = idx_bytes_u8({10, 10}, counting_bytes(100));
  bytes.resize(bytes.size() - 30);
  write_file(path, bytes, gzip);
  expect_idx_error(path, "is truncated: the data needs 100 bytes but only 70 remain");
}

INSTANTIATE_TEST_SUITE_P(Idx, IdxPlainAndGzip, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "gzip" : "plain"; });

TEST(Idx, BigEndianInt32AndFloat32) {
  TempDir dir;
  // type 0x0C (int32), one dimension of 2: values 1 and -2, big-endian.
  write_file(dir.file("i32"), {0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFE});
  const at::Tensor ints = dtrain::datasets::read_idx(dir.file("i32"));
  EXPECT_EQ(ints.scalar_type(), at::kInt);
  EXPECT_EQ(ints[0].item<int>(), 1);
  EXPECT_EQ(ints[1].item<int>(), -2);
  // type 0x0D (float32): 1.5f is 0x3FC00000.
  write_file(dir.file("f32"), {0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0xC0, 0, 0});
  EXPECT_FLOAT_EQ(dtrain::datasets::read_idx(dir.file("f32"))[0].item<float>(), 1.5f);
}

TEST(Idx, MissingFile) {
  TempDir dir;
  expect_idx_error(dir.file("nope"), "does not exist");
}

TEST(Idx, TruncatedHeader) {
  TempDir dir;
  write_file(dir.file("h"), {0, 0, 0x08, 3, 0, 0, 0, 1});
  expect_idx_error(dir.file("h"), "is truncated: the dimensions needs 12 bytes but only 4 remain");
}

TEST(Idx, BadMagic) {
  TempDir dir;
  write_file(dir.file("png"), {0x89, 'P', 'N', 'G', 0, 0, 0, 0});
  expect_idx_error(dir.file("png"), "is not an IDX file");
}

TEST(Idx, UnknownElementType) {
  TempDir dir;
  write_file(dir.file("t"), {0, 0, 0x42, 1, 0, 0, 0, 0});
  expect_idx_error(dir.file("t"), "unknown element type code 0x42");
}

TEST(Idx, ImplausibleSizeIsRejectedBeforeAllocating) {
  TempDir dir;
  write_file(dir.file("huge"), idx_bytes_u8({0xFFFFFFFF, 0xFFFFFFFF}, {}));
  expect_idx_error(dir.file("huge"), "implausible size");
}

}  // namespace

namespace {

TEST(Idx, CutGzipStreamIsReported) {
  TempDir dir;
  const std::string path = dir.file("cut.gz");
  write_file(path, idx_bytes_u8({100, 100}, counting_bytes(10000)), /*gzip=*/true);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  try {
    dtrain::datasets::read_idx(path);
    FAIL() << "a cut gzip stream was accepted";
  } catch (const dtrain::IOError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_TRUE(message.find("truncated") != std::string::npos ||
                message.find("corrupt") != std::string::npos)
        << message;
  }
}

}  // namespace

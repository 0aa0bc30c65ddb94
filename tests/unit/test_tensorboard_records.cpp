// TensorBoard's event files: the TFRecord framing checked against values
// tensorboard's own Python computes, and a writer's file read back frame by
// frame (tests/python/test_tensorboard.py reads whole runs with
// tensorboard's reader).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "dtrain/train/tensorboard_writer.h"
#include "dtrain/util/errors.h"
#include "test_support.h"
#include "train/tfrecord.h"

namespace {

using dtrain::train::detail::crc32c;
using dtrain::train::detail::masked_crc32c;
using dtrain::train::detail::tfrecord;

std::uint64_t little_endian(const std::string& bytes, std::size_t at, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes.at(at + static_cast<std::size_t>(i)));
  }
  return value;
}

TEST(TfRecord, Crc32cHasTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8a9136aau);  // RFC 3720, B.4
}

// The expected values are those of tensorboard's masked_crc32c
// (tensorboard.compat.tensorflow_stub.pywrap_tensorflow).
TEST(TfRecord, ARecordIsItsLengthDataAndMaskedCrcs) {
  const std::string record = tfrecord("hello");
  ASSERT_EQ(record.size(), 8u + 4u + 5u + 4u);
  EXPECT_EQ(little_endian(record, 0, 8), 5u);
  EXPECT_EQ(little_endian(record, 8, 4), 0x3e04b2eau);
  EXPECT_EQ(record.substr(12, 5), "hello");
  EXPECT_EQ(little_endian(record, 17, 4), 0x191c1fbbu);
  EXPECT_EQ(masked_crc32c("hello"), 0x191c1fbbu);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Each record of `bytes`, its length and both CRCs checked.
std::vector<std::string> read_records(const std::string& bytes) {
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_GE(bytes.size() - at, 16u) << "a record cut short at byte " << at;
    const std::uint64_t length = little_endian(bytes, at, 8);
    EXPECT_EQ(little_endian(bytes, at + 8, 4), masked_crc32c(bytes.substr(at, 8)));
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(little_endian(bytes, at + 12 + length, 4), masked_crc32c(data));
    records.push_back(data);
    at += 16 + length;
  }
  return records;
}

TEST(TensorBoardWriter, WritesTheVersionThenOneRecordPerScalar) {
  dtrain::testing::TempDir dir;
  std::string path;
  try {
    dtrain::train::TensorBoardWriter writer(dir.file("runs/a"));
    path = writer.path();
    writer.add_scalar("train/loss", 1, 0.5);
    writer.add_scalar("epoch/test_accuracy", 1, 0.875, 1.7e9);
    writer.add_scalar("epoch/peak_device_mb", 1, 0.0);
  } catch (const dtrain::Error& e) {
    ASSERT_NE(std::string(e.what()).find("built without Protobuf"), std::string::npos) << e.what();
    GTEST_SKIP() << e.what();
  }
  const std::string name = std::filesystem::path(path).filename().string();
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d+\..+\.\d+\.\d+)")))
      << name;
  EXPECT_EQ(std::filesystem::path(path).parent_path(), std::filesystem::path(dir.file("runs/a")));
  const std::vector<std::string> records = read_records(read_bytes(path));
  ASSERT_EQ(records.size(), 4u);
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(records[1].find("train/loss"), std::string::npos);
  EXPECT_NE(records[2].find("epoch/test_accuracy"), std::string::npos);
  // A value of 0 is written too (field 2, fixed32: tag byte 0x15), or
  // TensorBoard would see a scalar without a value.
  EXPECT_NE(records[3].find(std::string("\x15\0\0\0\0", 5)), std::string::npos);
}

TEST(TensorBoardWriter, ADirectoryThatCannotBeMadeIsNamed) {
  dtrain::testing::TempDir dir;
  std::ofstream(dir.file("file")) << "in the way";
  try {
    dtrain::train::TensorBoardWriter writer(dir.file("file/runs"));
    FAIL() << "no error";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + dir.file("file/runs") + "'"), std::string::npos)
        << e.what();
  }
}

}  // namespace

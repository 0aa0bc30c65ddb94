// train_toycnn --amp bf16: the toy CNN trained under CPU bf16 autocast ends
// within 1 percentage point of the same run in fp32 (same seed, same data,
// same order), on a 30000-image subset of Fashion-MNIST for 1 epoch. The
// two runs go side by side, one thread each (bf16 takes ~4x as long on a
// CPU without bf16 instructions).
#include <gtest/gtest.h>

#include <algorithm>
#include <future>

#include "dtrain/datasets/fashion_mnist.h"
#include "test_support.h"

namespace {

using dtrain::testing::ProcessResult;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;

// The last row's test_accuracy, found by its column's name.
double final_accuracy(const std::string& csv) {
  const auto rows = dtrain::testing::read_csv(csv);
  if (rows.size() < 2) {
    ADD_FAILURE() << "no epoch rows in " << csv;
    return 0;
  }
  const auto& header = rows.front();
  const auto column = std::find(header.begin(), header.end(), "test_accuracy") - header.begin();
  if (column == static_cast<std::ptrdiff_t>(header.size())) {
    ADD_FAILURE() << "no test_accuracy column in " << csv;
    return 0;
  }
  return std::stod(rows.back().at(static_cast<size_t>(column)));
}

ProcessResult train(const std::string& amp, const std::string& csv) {
  return run_process({DTRAIN_TRAIN_TOYCNN_PATH, "--amp", amp, "--epochs", "1", "--train-limit",
                      "30000", "--threads", "1", "--csv", csv});
}

TEST(TrainToyCnnAmp, UnknownPrecisionIsAOneLineError) {
  const auto result = run_process({DTRAIN_TRAIN_TOYCNN_PATH, "--amp", "fp8"});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_EQ(result.output.rfind("train_toycnn: error: ", 0), 0u) << result.output;
  EXPECT_NE(result.output.find("--amp"), std::string::npos) << result.output;
}

TEST(TrainToyCnnAmp, Bf16AutocastMatchesFp32AccuracyWithinOnePoint) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  TempDir dir;
  auto fp32 = std::async(std::launch::async, train, "off", dir.file("fp32.csv"));
  auto bf16 = std::async(std::launch::async, train, "bf16", dir.file("bf16.csv"));
  const ProcessResult fp32_run = fp32.get();
  const ProcessResult bf16_run = bf16.get();
  ASSERT_EQ(fp32_run.exit_code, 0) << fp32_run.output;
  ASSERT_EQ(bf16_run.exit_code, 0) << bf16_run.output;
  EXPECT_NE(fp32_run.output.find("precision: fp32"), std::string::npos);
  EXPECT_NE(bf16_run.output.find("precision: bf16 autocast (CPU)"), std::string::npos);

  const double fp32_accuracy = final_accuracy(dir.file("fp32.csv"));
  const double bf16_accuracy = final_accuracy(dir.file("bf16.csv"));
  std::cout << "test accuracy: fp32 " << 100 * fp32_accuracy << "%, bf16 autocast "
            << 100 * bf16_accuracy << "%\n";
  EXPECT_GT(fp32_accuracy, 0.7) << "the fp32 run did not learn (chance: 10%)";
  EXPECT_NEAR(bf16_accuracy, fp32_accuracy, 0.01);
  // The runs really differ in precision: identical accuracies to the last
  // digit would mean autocast did nothing.
  EXPECT_NE(bf16_accuracy, fp32_accuracy);
}

}  // namespace

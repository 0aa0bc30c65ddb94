// dtrain::models::ToyCnn: the seed's architecture, its checks, and that it learns.
#include <gtest/gtest.h>

#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "dtrain/models/toy_cnn.h"

namespace {

using dtrain::models::ToyCnn;
using dtrain::models::ToyCnnOptions;

int64_t parameter_count(ToyCnn& model) {
  int64_t count = 0;
  for (const auto& p : model->parameters()) {
    count += p.numel();
  }
  return count;
}

TEST(ToyCnn, SeedArchitecture) {
  // conv 3->6 k5 (456) + conv 6->16 k5 (2416) + fc 400->120 (48120) + 120->84 (10164) + 84->10
  // (850)
  ToyCnn rgb;
  EXPECT_EQ(parameter_count(rgb), 62006);
  ToyCnn grey(ToyCnnOptions().in_channels(1));
  EXPECT_EQ(parameter_count(grey), 62006 - 2 * 150);
  const auto names = grey->named_parameters().keys();
  EXPECT_EQ(names.front(), "conv1.weight");
  EXPECT_EQ(names.back(), "fc3.bias");
}

TEST(ToyCnn, OutputShape) {
  ToyCnn model(ToyCnnOptions().in_channels(1).num_classes(7));
  EXPECT_EQ(model(torch::randn({5, 1, 32, 32})).sizes(), (std::vector<int64_t>{5, 7}));
}

TEST(ToyCnn, WrongInputShapeNamesExpectation) {
  ToyCnn model(ToyCnnOptions().in_channels(1));
  try {
    model(torch::randn({2, 1, 28, 28}));
    FAIL() << "a 28x28 input was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("input must have shape (B, 1, 32, 32), got [2, 1, 28, 28]"),
        std::string::npos)
        << e.what();
  }
}

TEST(ToyCnn, BadOptionsAreRejected) {
  EXPECT_THROW(ToyCnn(ToyCnnOptions().in_channels(0)), c10::Error);
  EXPECT_THROW(ToyCnn(ToyCnnOptions().num_classes(1)), c10::Error);
}

TEST(ToyCnn, FitsASmallBatch) {
  torch::manual_seed(0);
  ToyCnn model(ToyCnnOptions().in_channels(1));
  const auto images = torch::randn({16, 1, 32, 32});
  const auto labels = torch::arange(16) % 10;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  double first = 0;
  double last = 0;
  for (int step = 0; step < 60; ++step) {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(images), labels);
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.2 * first) << "first loss " << first << ", last " << last;
}

}  // namespace

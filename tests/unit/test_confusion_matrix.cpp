// dtrain::train::ConfusionMatrix: overall and mean class accuracy on an
// example worked by hand, classes without samples, sums over ranks, and
// bad input. (tests/python/test_classification_metrics.py compares it with
// scikit-learn on random predictions.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dtrain/train/confusion_matrix.h"
#include "expect_error.h"

namespace {

using dtrain::train::ConfusionMatrix;

at::Tensor confusion_longs(std::vector<int64_t> values) {
  return at::tensor(values, at::kLong);
}

// Class 0: 4 samples, 3 right (one taken for class 1); class 1: 2 samples,
// 1 right; class 2: 4 samples, 2 right (two taken for class 0).
//   OA = 6 / 10 = 0.6;  mAcc = (3/4 + 1/2 + 2/4) / 3 = 0.58333...
const std::vector<int64_t> kExampleTruth{0, 0, 0, 0, 1, 1, 2, 2, 2, 2};
const std::vector<int64_t> kExamplePredicted{0, 1, 0, 0, 1, 2, 2, 0, 2, 0};

TEST(ConfusionMatrix, ScoresAnExampleWorkedByHand) {
  ConfusionMatrix confusion(3);
  confusion.add(confusion_longs(kExamplePredicted), confusion_longs(kExampleTruth));
  const std::vector<std::vector<int64_t>> expected{{3, 1, 0}, {0, 1, 1}, {2, 0, 2}};
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t p = 0; p < 3; ++p) {
      EXPECT_EQ(confusion.count(t, p), expected[t][p]) << "row " << t << ", column " << p;
    }
  }
  EXPECT_EQ(confusion.samples(), 10);
  EXPECT_EQ(confusion.class_samples(0), 4);
  EXPECT_EQ(confusion.class_samples(1), 2);
  EXPECT_EQ(confusion.class_correct(2), 2);
  EXPECT_DOUBLE_EQ(*confusion.class_accuracy(0), 0.75);
  EXPECT_DOUBLE_EQ(*confusion.class_accuracy(1), 0.5);
  EXPECT_DOUBLE_EQ(*confusion.class_accuracy(2), 0.5);
  EXPECT_DOUBLE_EQ(confusion.overall_accuracy(), 0.6);
  EXPECT_DOUBLE_EQ(confusion.mean_class_accuracy(), 1.75 / 3);
}

// A class with no test samples has no accuracy and is left out of the
// mean (as balanced_accuracy_score does); predicting it still counts
// against the true class.
TEST(ConfusionMatrix, ClassesWithoutSamplesAreLeftOutOfTheMean) {
  ConfusionMatrix confusion(4);
  confusion.add(confusion_longs(kExamplePredicted), confusion_longs(kExampleTruth));
  confusion.add(confusion_longs({3}), confusion_longs({0}));
  EXPECT_FALSE(confusion.class_accuracy(3).has_value());
  EXPECT_DOUBLE_EQ(*confusion.class_accuracy(0), 0.6);
  EXPECT_DOUBLE_EQ(confusion.overall_accuracy(), 6.0 / 11);
  EXPECT_DOUBLE_EQ(confusion.mean_class_accuracy(), (0.6 + 0.5 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(ConfusionMatrix(5).overall_accuracy(), 0.0);
  EXPECT_DOUBLE_EQ(ConfusionMatrix(5).mean_class_accuracy(), 0.0);
}

// Each rank counts its own slice; the sums added up are the whole set's.
TEST(ConfusionMatrix, SumsOfSlicesAddUpToTheWholeSet) {
  ConfusionMatrix whole(3);
  whole.add(confusion_longs(kExamplePredicted), confusion_longs(kExampleTruth));
  std::vector<double> total(9, 0.0);
  for (const auto& [begin, end] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 7}, {7, 10}}) {
    ConfusionMatrix slice(3);
    slice.add(confusion_longs(kExamplePredicted).slice(0, begin, end),
              confusion_longs(kExampleTruth).slice(0, begin, end));
    const auto sums = slice.sums();
    for (std::size_t i = 0; i < sums.size(); ++i) {
      total[i] += sums[i];
    }
  }
  const ConfusionMatrix joined = ConfusionMatrix::from_sums(3, total);
  EXPECT_EQ(joined.sums(), whole.sums());
  EXPECT_DOUBLE_EQ(joined.mean_class_accuracy(), whole.mean_class_accuracy());
}

TEST(ConfusionMatrix, BadInputIsNamed) {
  using dtrain::testing::expect_error;
  ConfusionMatrix confusion(3);
  expect_error(
      [&] {
        confusion.add(confusion_longs({0, 3}), confusion_longs({0, 1}));
      },
      "predicted holds class 3, outside [0, 3)");
  expect_error([&] { confusion.add(confusion_longs({0}), confusion_longs({-1})); },
               "labels holds class -1");
  expect_error(
      [&] {
        confusion.add(at::zeros({2}), confusion_longs({0, 1}));
      },
      "predicted must hold class numbers");
  expect_error(
      [&] {
        confusion.add(confusion_longs({0, 1}), confusion_longs({0}));
      },
      "2 predictions for 1 labels");
  expect_error(
      [&] {
        confusion.add(confusion_longs({0}).reshape({1, 1}), confusion_longs({0}));
      },
      "predicted must be a tensor of shape (N,)");
  expect_error([] { ConfusionMatrix(0); }, "num_classes must be at least 1");
  expect_error(
      [] {
        ConfusionMatrix::from_sums(2, std::vector<double>{1, 2, 3});
      },
      "3 sums for 2 classes");
  expect_error([] { ConfusionMatrix::from_sums(1, std::vector<double>{0.5}); },
               "expected a whole count");
}

}  // namespace

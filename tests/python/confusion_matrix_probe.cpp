// Scores predictions with dtrain::train::ConfusionMatrix as a sharded
// evaluation does: reads "<classes> <ranks>" and then one "<truth>
// <predicted>" pair a line from stdin, counts each rank's contiguous slice
// in a matrix of its own, adds their sums up as Job::sum would and prints
// "overall_accuracy <x>", "mean_class_accuracy <x>" and one "row <counts...>"
// line per true class. test_classification_metrics.py compares them with
// scikit-learn's.
#include <cstdint>
#include <iostream>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/train/confusion_matrix.h"

int main() {
  int64_t classes = 0;
  int64_t ranks = 0;
  if (!(std::cin >> classes >> ranks) || classes < 1 || ranks < 1) {
    std::cerr << "expected '<classes> <ranks>' first\n";
    return 2;
  }
  std::vector<int64_t> truth;
  std::vector<int64_t> predicted;
  for (int64_t t = 0, p = 0; std::cin >> t >> p;) {
    truth.push_back(t);
    predicted.push_back(p);
  }
  const auto size = static_cast<int64_t>(truth.size());
  const at::Tensor all_truth = at::tensor(truth, at::kLong);
  const at::Tensor all_predicted = at::tensor(predicted, at::kLong);
  std::vector<double> total(static_cast<std::size_t>(classes * classes), 0.0);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    const int64_t begin = size * rank / ranks;
    const int64_t end = size * (rank + 1) / ranks;
    dtrain::train::ConfusionMatrix slice(classes);
    slice.add(all_predicted.slice(0, begin, end), all_truth.slice(0, begin, end));
    const std::vector<double> sums = slice.sums();
    for (std::size_t i = 0; i < sums.size(); ++i) {
      total[i] += sums[i];
    }
  }
  const auto confusion = dtrain::train::ConfusionMatrix::from_sums(classes, total);
  std::cout << fmt::format("overall_accuracy {:.17g}\n", confusion.overall_accuracy());
  std::cout << fmt::format("mean_class_accuracy {:.17g}\n", confusion.mean_class_accuracy());
  for (int64_t t = 0; t < classes; ++t) {
    std::cout << "row";
    for (int64_t p = 0; p < classes; ++p) {
      std::cout << " " << confusion.count(t, p);
    }
    std::cout << "\n";
  }
  return 0;
}

// The confusion matrix of a classifier over a test set, and the scores a
// paper reports from it: overall accuracy (OA, the share of samples
// predicted right), mean class accuracy (mAcc: the mean over the classes
// that have samples of each one's share predicted right, scikit-learn's
// balanced_accuracy_score) and each class's own accuracy. Its counts add
// up over batches and, through Job::sum, over the ranks of a job, so that
// each sample of a sharded evaluation is counted once:
//
//   ConfusionMatrix confusion(num_classes);
//   context.for_each_batch(size, [&](int64_t begin, int64_t count) {
//     confusion.add(logits.argmax(1), labels);           // this rank's slice
//   });
//   confusion = ConfusionMatrix::from_sums(num_classes, context.job().sum(confusion.sums()));
//   confusion.overall_accuracy(), confusion.mean_class_accuracy()
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::train {

class ConfusionMatrix {
 public:
  // Throws dtrain::Error unless num_classes >= 1.
  explicit ConfusionMatrix(int64_t num_classes);

  // Counts each sample of class labels[i] predicted as predicted[i]: both
  // (N,) integer tensors on any device, values in [0, num_classes). Throws
  // dtrain::Error naming the argument for another shape, type or value.
  void add(const at::Tensor& predicted, const at::Tensor& labels);

  int64_t num_classes() const { return num_classes_; }
  // Samples of class `truth` predicted as `predicted` (row truth, column predicted).
  int64_t count(int64_t truth, int64_t predicted) const;
  int64_t samples() const;
  // The samples of class c (its row's sum), and those predicted right.
  int64_t class_samples(int64_t c) const;
  int64_t class_correct(int64_t c) const { return count(c, c); }
  // Class c's share of samples predicted right; none when it has no samples.
  std::optional<double> class_accuracy(int64_t c) const;

  // The share of all samples predicted right; 0 before any.
  double overall_accuracy() const;
  // The mean of class_accuracy over the classes with samples; 0 before any.
  double mean_class_accuracy() const;

  // The counts row by row, as doubles, to add up over ranks (Job::sum;
  // exact below 2^53 samples), and back.
  std::vector<double> sums() const;
  // Throws dtrain::Error unless `sums` holds num_classes^2 whole,
  // non-negative counts.
  static ConfusionMatrix from_sums(int64_t num_classes, std::span<const double> sums);

 private:
  int64_t num_classes_;
  std::vector<int64_t> counts_;  // row-major: [truth * num_classes + predicted]
};

}  // namespace dtrain::train

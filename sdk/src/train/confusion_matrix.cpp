#include "dtrain/train/confusion_matrix.h"

#include <cmath>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

namespace {

void check_classes(const char* name, const at::Tensor& values, int64_t num_classes) {
  DTRAIN_CHECK(values.defined() && values.dim() == 1, "ConfusionMatrix::add: ", name,
               " must be a tensor of shape (N,), got ",
               values.defined() ? c10::str(values.sizes()) : std::string("an undefined tensor"));
  DTRAIN_CHECK(!at::isFloatingType(values.scalar_type()) && values.scalar_type() != at::kBool,
               "ConfusionMatrix::add: ", name, " must hold class numbers (an integer type), got ",
               values.scalar_type());
  if (values.numel() == 0) {
    return;
  }
  const int64_t low = values.min().item<int64_t>();
  const int64_t high = values.max().item<int64_t>();
  DTRAIN_CHECK(low >= 0 && high < num_classes, "ConfusionMatrix::add: ", name, " holds class ",
               low < 0 ? low : high, ", outside [0, ", num_classes, ")");
}

}  // namespace

ConfusionMatrix::ConfusionMatrix(int64_t num_classes)
    : num_classes_(num_classes),
      counts_(static_cast<std::size_t>(num_classes > 0 ? num_classes * num_classes : 0), 0) {
  DTRAIN_CHECK(num_classes >= 1, "ConfusionMatrix: num_classes must be at least 1, got ",
               num_classes);
}

void ConfusionMatrix::add(const at::Tensor& predicted, const at::Tensor& labels) {
  check_classes("predicted", predicted, num_classes_);
  check_classes("labels", labels, num_classes_);
  DTRAIN_CHECK(predicted.size(0) == labels.size(0), "ConfusionMatrix::add: ", predicted.size(0),
               " predictions for ", labels.size(0), " labels");
  if (labels.numel() == 0) {
    return;
  }
  const at::Tensor cells = (labels.to(at::kLong) * num_classes_ + predicted.to(at::kLong)).cpu();
  const at::Tensor counts = at::bincount(cells, {}, num_classes_ * num_classes_).contiguous();
  const int64_t* added = counts.data_ptr<int64_t>();
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += added[i];
  }
}

int64_t ConfusionMatrix::count(int64_t truth, int64_t predicted) const {
  DTRAIN_CHECK(truth >= 0 && truth < num_classes_ && predicted >= 0 && predicted < num_classes_,
               "ConfusionMatrix::count: classes (", truth, ", ", predicted, ") outside [0, ",
               num_classes_, ")");
  return counts_[static_cast<std::size_t>(truth * num_classes_ + predicted)];
}

int64_t ConfusionMatrix::samples() const {
  int64_t total = 0;
  for (const int64_t n : counts_) {
    total += n;
  }
  return total;
}

int64_t ConfusionMatrix::class_samples(int64_t c) const {
  int64_t total = 0;
  for (int64_t p = 0; p < num_classes_; ++p) {
    total += count(c, p);
  }
  return total;
}

std::optional<double> ConfusionMatrix::class_accuracy(int64_t c) const {
  const int64_t total = class_samples(c);
  if (total == 0) {
    return std::nullopt;
  }
  return static_cast<double>(class_correct(c)) / static_cast<double>(total);
}

double ConfusionMatrix::overall_accuracy() const {
  const int64_t total = samples();
  if (total == 0) {
    return 0;
  }
  int64_t correct = 0;
  for (int64_t c = 0; c < num_classes_; ++c) {
    correct += class_correct(c);
  }
  return static_cast<double>(correct) / static_cast<double>(total);
}

double ConfusionMatrix::mean_class_accuracy() const {
  double sum = 0;
  int64_t classes = 0;
  for (int64_t c = 0; c < num_classes_; ++c) {
    if (const auto accuracy = class_accuracy(c)) {
      sum += *accuracy;
      ++classes;
    }
  }
  return classes == 0 ? 0 : sum / static_cast<double>(classes);
}

std::vector<double> ConfusionMatrix::sums() const {
  return {counts_.begin(), counts_.end()};
}

ConfusionMatrix ConfusionMatrix::from_sums(int64_t num_classes, std::span<const double> sums) {
  ConfusionMatrix out(num_classes);
  DTRAIN_CHECK(sums.size() == out.counts_.size(), "ConfusionMatrix::from_sums: ", sums.size(),
               " sums for ", num_classes, " classes; expected ", out.counts_.size());
  for (std::size_t i = 0; i < sums.size(); ++i) {
    DTRAIN_CHECK(sums[i] >= 0 && std::floor(sums[i]) == sums[i], "ConfusionMatrix::from_sums: sum ",
                 i, " is ", sums[i], "; expected a whole count >= 0");
    out.counts_[i] = static_cast<int64_t>(sums[i]);
  }
  return out;
}

}  // namespace dtrain::train

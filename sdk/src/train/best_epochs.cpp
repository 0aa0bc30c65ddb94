#include "dtrain/train/best_epochs.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

double metric_value(const EvalStats& eval, const std::string& name,
                    const std::vector<std::string>& extra_columns) {
  if (name == "test_accuracy") {
    return eval.accuracy;
  }
  if (name == "test_loss") {
    return eval.mean_loss;
  }
  const auto it = std::find(extra_columns.begin(), extra_columns.end(), name);
  DTRAIN_CHECK(it != extra_columns.end(), "no metric named '", name,
               "': the report has test_accuracy, test_loss and its own columns");
  const auto index = static_cast<std::size_t>(it - extra_columns.begin());
  DTRAIN_CHECK(index < eval.extra.size(), "the evaluation gave no value for '", name, "'");
  return eval.extra[index];
}

void BestEpochs::add(int epoch, double value) {
  values_[epoch] = value;
}

bool BestEpochs::better(double a, double b, double min_delta) const {
  return lower_ ? a < b - min_delta : a > b + min_delta;
}

std::vector<int> BestEpochs::best(int k) const {
  std::vector<std::pair<int, double>> ranked(values_.begin(), values_.end());  // by epoch
  std::stable_sort(ranked.begin(), ranked.end(),
                   [this](const auto& a, const auto& b) { return better(a.second, b.second, 0); });
  std::vector<int> epochs;
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < k; ++i) {
    epochs.push_back(ranked[i].first);
  }
  return epochs;
}

int BestEpochs::epochs_since_improvement(double min_delta) const {
  // Walk the epochs in order; an epoch counts as an improvement when it
  // beats the best so far by more than min_delta (Keras' EarlyStopping).
  int since = 0;
  bool first = true;
  double best = 0;
  for (const auto& [epoch, value] : values_) {
    if (first || better(value, best, min_delta)) {
      best = value;
      since = 0;
      first = false;
    } else {
      ++since;
    }
  }
  return since;
}

at::Tensor BestEpochs::as_tensor() const {
  at::Tensor record = at::empty({static_cast<int64_t>(values_.size()), 2}, at::kDouble);
  auto rows = record.accessor<double, 2>();
  int64_t row = 0;
  for (const auto& [epoch, value] : values_) {
    rows[row][0] = epoch;
    rows[row][1] = value;
    ++row;
  }
  return record;
}

void BestEpochs::load(const at::Tensor& record) {
  DTRAIN_CHECK(record.dim() == 2 && record.size(1) == 2,
               "a checkpoint's record of epoch metrics has shape ", record.sizes(),
               ", not (epochs, 2)");
  const at::Tensor rows = record.to(at::kDouble).contiguous();
  const auto values = rows.accessor<double, 2>();
  values_.clear();
  for (int64_t row = 0; row < rows.size(0); ++row) {
    values_[static_cast<int>(values[row][0])] = values[row][1];
  }
}

}  // namespace dtrain::train

// A run's epochs ranked by one metric of their evaluation (--best-by):
// which epoch is best, which k are (--keep-best), and whether the metric
// has stopped improving (--early-stop-patience). Every rank holds the same
// record, as every rank evaluates the whole test set; a checkpoint keeps it
// (as_tensor), so a resumed run ranks the epochs of the run it continues.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/train/evaluation.h"

namespace dtrain::train {

// The value of the metric named `name` in an epoch's evaluation:
// "test_accuracy", "test_loss", or one of `extra_columns` (EvalStats::
// extra, in order). Throws dtrain::Error naming it otherwise.
double metric_value(const EvalStats& eval, const std::string& name,
                    const std::vector<std::string>& extra_columns);

class BestEpochs {
 public:
  // `lower_is_better`: a loss; otherwise the highest value is best.
  explicit BestEpochs(bool lower_is_better = false) : lower_(lower_is_better) {}

  // Records `epoch`'s value (a repeated epoch, after a resume, replaces it).
  void add(int epoch, double value);

  // The best `k` epochs, best first (ties: the earlier epoch).
  std::vector<int> best(int k) const;
  // Epochs recorded since the last one that beat every epoch before it by
  // more than `min_delta` (0 when the last epoch did; Keras' EarlyStopping).
  int epochs_since_improvement(double min_delta) const;
  bool empty() const { return values_.empty(); }

  // The record as a (epochs, 2) double tensor of epoch and value, and back.
  at::Tensor as_tensor() const;
  void load(const at::Tensor& record);

 private:
  bool better(double a, double b, double min_delta) const;  // a beats b by > min_delta

  bool lower_;
  std::map<int, double> values_;  // by epoch
};

}  // namespace dtrain::train

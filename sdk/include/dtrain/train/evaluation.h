// Evaluation in a training job. The Trainer calls its evaluate callback
// after every epoch with the module in evaluation mode, without gradients
// and under the run's autocast; each rank scores a contiguous slice of the
// test set and the sums are added up over the job, so that every rank
// gets the whole set's numbers:
//
//   [&](JobModel<Net>& model, const EvalContext& context) {
//     double loss = 0, right = 0;
//     context.for_each_batch(test_size, [&](int64_t begin, int64_t count) {
//       const at::Tensor logits = model.eval(inputs.narrow(0, begin, count).to(context.device()));
//       ...  // loss += the batch's summed loss; right += its right predictions
//     });
//     const std::vector<double> totals = context.job().sum({loss, right});
//     return EvalStats{.mean_loss = totals[0] / test_size, .accuracy = totals[1] / test_size};
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <c10/core/Device.h>

#include "dtrain/train/job.h"

namespace dtrain::train {

// What an evaluation found over the whole test set: the mean loss, the
// share of predictions right (samples, or points), and a run's own metrics
// in the order of TrainerOptions::report_columns.
struct EvalStats {
  double mean_loss = 0;
  double accuracy = 0;
  std::vector<double> extra = {};
};

class EvalContext {
 public:
  EvalContext(const Job& job, int64_t batch_size) : job_(&job), batch_size_(batch_size) {}

  const Job& job() const { return *job_; }
  c10::Device device() const { return job_->device; }
  int64_t batch_size() const { return batch_size_; }  // TrainerOptions::eval_batch

  // Calls `batch(begin, count)` for consecutive batches of at most
  // batch_size() samples of this rank's slice of a set of `size`: rank r of
  // N takes samples [size * r / N, size * (r + 1) / N).
  void for_each_batch(int64_t size,
                      const std::function<void(int64_t begin, int64_t count)>& batch) const;

 private:
  const Job* job_;
  int64_t batch_size_;
};

}  // namespace dtrain::train

#include "dtrain/train/evaluation.h"

#include <algorithm>

namespace dtrain::train {

void EvalContext::for_each_batch(
    int64_t size, const std::function<void(int64_t begin, int64_t count)>& batch) const {
  const int64_t first = size * job_->rank / job_->world;
  const int64_t last = size * (job_->rank + 1) / job_->world;
  for (int64_t begin = first; begin < last; begin += batch_size_) {
    batch(begin, std::min(batch_size_, last - begin));
  }
}

}  // namespace dtrain::train

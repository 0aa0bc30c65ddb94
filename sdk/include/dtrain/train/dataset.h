// What the Trainer trains on: a set of samples it can make batches of, by
// index. The Trainer's sampler chooses the indices (DistributedSampler's
// shards, or --rank-weights' split), and loader threads make the batches
// ahead of the steps (data::PrefetchLoader).
//
//   TensorDataset train({points, labels});                       // held in memory
//   TensorDataset augmented({points, labels}, [](const at::Tensor& x, at::Generator& g) {
//     return jitter(x, g);
//   });
//
// A dataset of another kind derives from Dataset. batch() runs on loader
// threads, several at once and beside the training steps, outside
// autocast: it must be safe to call concurrently and draw randomness only
// from the generator it is given (each batch's own, seeded by the run's
// seed, the epoch, the rank and the batch), so that a resumed run makes
// the batches of an unbroken one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

namespace dtrain::train {

// One batch's tensors, one row per sample: inputs first, then labels (or
// whatever the step needs), on the CPU as a dataset makes them and on the
// job's device when the step gets them.
using Batch = std::vector<at::Tensor>;

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // The samples at `index` (int64, on the CPU), selected and augmented.
  virtual Batch batch(const at::Tensor& index, at::Generator& generator) const = 0;
  // The labels whose fingerprint the processes of a job compare, so that
  // nodes reading different copies of a dataset are found (labels_fingerprint.h);
  // none by default.
  virtual std::vector<at::Tensor> labels() const { return {}; }
  // What the data is, for the log's first line ("1,000 samples").
  virtual std::string summary() const;
};

// Tensors indexed along their first dimension, held in memory: a batch is
// the rows of each at its indices, the first tensor (the inputs) passed
// through `augment` when there is one. Every tensor but the first counts as
// labels.
class TensorDataset : public Dataset {
 public:
  // Applied to each training batch's inputs, drawing from its generator.
  using Augment = std::function<at::Tensor(const at::Tensor& inputs, at::Generator& generator)>;

  // Throws dtrain::Error naming the tensor when there are none, one is
  // undefined, or their first dimensions differ.
  explicit TensorDataset(std::vector<at::Tensor> tensors, Augment augment = {});

  int64_t size() const override;
  Batch batch(const at::Tensor& index, at::Generator& generator) const override;
  std::vector<at::Tensor> labels() const override;
  std::string summary() const override;

  // The log's words for it instead of "N samples".
  TensorDataset& summary(std::string summary);
  const std::vector<at::Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<at::Tensor> tensors_;
  Augment augment_;
  std::string summary_;
};

}  // namespace dtrain::train

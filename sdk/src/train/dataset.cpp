#include "dtrain/train/dataset.h"

#include <utility>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

std::string Dataset::summary() const {
  return fmt::format("{} samples", size());
}

TensorDataset::TensorDataset(std::vector<at::Tensor> tensors, Augment augment)
    : tensors_(std::move(tensors)), augment_(std::move(augment)) {
  DTRAIN_CHECK(!tensors_.empty(), "TensorDataset: no tensors");
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    DTRAIN_CHECK(tensors_[i].defined() && tensors_[i].dim() > 0, "TensorDataset: tensor ", i,
                 " is undefined or a scalar");
    DTRAIN_CHECK(tensors_[i].size(0) == tensors_[0].size(0), "TensorDataset: tensor ", i, " has ",
                 tensors_[i].size(0), " rows, tensor 0 has ", tensors_[0].size(0));
  }
}

int64_t TensorDataset::size() const {
  return tensors_.front().size(0);
}

Batch TensorDataset::batch(const at::Tensor& index, at::Generator& generator) const {
  Batch batch;
  for (const at::Tensor& tensor : tensors_) {
    batch.push_back(tensor.index_select(0, index));
  }
  if (augment_) {
    batch.front() = augment_(batch.front(), generator);
  }
  return batch;
}

std::vector<at::Tensor> TensorDataset::labels() const {
  return {tensors_.begin() + 1, tensors_.end()};
}

std::string TensorDataset::summary() const {
  return summary_.empty() ? Dataset::summary() : summary_;
}

TensorDataset& TensorDataset::summary(std::string summary) {
  summary_ = std::move(summary);
  return *this;
}

}  // namespace dtrain::train

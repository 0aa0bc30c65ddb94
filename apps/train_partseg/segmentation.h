// Part segmentation's training set and evaluation for train_partseg: the
// model sees the points and their object's category, predicts a part for
// every point, and is scored as PointNet++ scores ShapeNet-Part (point
// accuracy, instance and class mIoU; models/part_segmentation_metrics.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "dtrain/datasets/point_cloud_augment.h"
#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/models/part_segmentation_metrics.h"
#include "dtrain/train/dataset.h"
#include "dtrain/train/evaluation.h"

namespace dtrain::apps {

// Batches of clouds, {points, parts, categories}: with `augment`
// (shuffle_points and dropout must be off), each cloud's points get a new
// order (its labels follow), then augment_point_clouds' scale, shift and
// jitter, on the CPU. The categories and parts are the labels the
// processes compare.
class PartDataset : public train::Dataset {
 public:
  // Keeps a reference to `clouds`, which must outlive it.
  PartDataset(const datasets::LabeledParts& clouds,
              std::optional<datasets::PointCloudAugmentOptions> augment, std::string summary);

  int64_t size() const override { return clouds_.size(); }
  train::Batch batch(const at::Tensor& index, at::Generator& generator) const override;
  std::vector<at::Tensor> labels() const override { return {clouds_.categories, clouds_.parts}; }
  std::string summary() const override { return summary_; }

 private:
  const datasets::LabeledParts& clouds_;
  std::optional<datasets::PointCloudAugmentOptions> augment_;
  std::string summary_;
};

// The model's forward: points (B, N, 3), categories (B,) -> logits (B, parts, N).
using SegmentationForward =
    std::function<at::Tensor(const at::Tensor& points, const at::Tensor& categories)>;

// Over this rank's slice of `test` (EvalContext::for_each_batch), the
// whole set's mean_loss per point, accuracy over points, and extra =
// {instance mIoU, class mIoU (over the categories in the test set)}.
train::EvalStats segmentation_evaluate(const SegmentationForward& forward,
                                       const datasets::LabeledParts& test,
                                       const models::CategoryParts& owned,
                                       const train::EvalContext& context);

}  // namespace dtrain::apps

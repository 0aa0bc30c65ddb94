// Part segmentation's training loss and evaluation for train_partseg: the
// model sees the points and their object's category, predicts a part for
// every point, and is scored as PointNet++ scores ShapeNet-Part (point
// accuracy, instance and class mIoU; models/part_segmentation_metrics.h).
#pragma once

#include <functional>
#include <optional>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "dtrain/datasets/point_cloud_augment.h"
#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/models/part_segmentation_metrics.h"
#include "training_job.h"
#include "training_loop.h"

namespace dtrain::apps {

// The model's forward: points (B, N, 3), categories (B,) -> logits (B, parts, N).
using SegmentationForward =
    std::function<at::Tensor(const at::Tensor& points, const at::Tensor& categories)>;

// Batches of `train` clouds, {points, parts, categories}, and their mean
// per-point cross-entropy. With `augment` (shuffle_points and dropout must
// be off), each cloud's points get a new order (its labels follow), then
// augment_point_clouds' scale, shift and jitter, on the CPU.
TrainBatches segmentation_batches(const SegmentationForward& forward,
                                  const datasets::LabeledParts& train,
                                  std::optional<datasets::PointCloudAugmentOptions> augment);

// The names of EvalStats::extra as segmentation_evaluate fills it.
const std::vector<std::string>& segmentation_metric_names();

// Rank r evaluates the r-th of `world` contiguous slices of `test` with the
// module in evaluation mode; the sums are combined, so every rank gets the
// whole set's numbers: mean_loss per point, accuracy over points, and
// extra = {instance mIoU, class mIoU (over the categories in the test set)}.
EvalStats segmentation_evaluate(const SegmentationForward& forward, torch::nn::Module& module,
                                const datasets::LabeledParts& test,
                                const models::CategoryParts& owned, const LoopSettings& settings,
                                const Job& job);

}  // namespace dtrain::apps

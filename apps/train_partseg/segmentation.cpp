#include "segmentation.h"

#include <span>
#include <utility>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace F = torch::nn::functional;

PartDataset::PartDataset(const datasets::LabeledParts& clouds,
                         std::optional<datasets::PointCloudAugmentOptions> augment,
                         std::string summary)
    : clouds_(clouds), augment_(std::move(augment)), summary_(std::move(summary)) {
  if (augment_) {
    DTRAIN_CHECK(!augment_->shuffle_points() && augment_->dropout_max() == 0,
                 "PartDataset: shuffle points here, where the labels follow, not in "
                 "augment_point_clouds; point dropout would leave the labels behind");
  }
}

train::Batch PartDataset::batch(const at::Tensor& index, at::Generator& generator) const {
  at::Tensor points = clouds_.points.index_select(0, index);
  at::Tensor parts = clouds_.parts.index_select(0, index);
  if (augment_) {
    const at::Tensor order = at::rand(parts.sizes(), generator).argsort(/*dim=*/int64_t{1});
    points = points.gather(1, order.unsqueeze(2).expand_as(points));
    parts = parts.gather(1, order);
    points = datasets::augment_point_clouds(points, *augment_, generator);
  }
  return {points, parts, clouds_.categories.index_select(0, index)};
}

train::EvalStats segmentation_evaluate(const SegmentationForward& forward,
                                       const datasets::LabeledParts& test,
                                       const models::CategoryParts& owned,
                                       const train::EvalContext& context) {
  models::MiouTotals miou(static_cast<int64_t>(owned.size()));
  double loss_sum = 0;
  double correct = 0;
  context.for_each_batch(test.size(), [&](int64_t begin, int64_t count) {
    const at::Tensor categories = test.categories.narrow(0, begin, count).to(context.device());
    const at::Tensor parts = test.parts.narrow(0, begin, count).to(context.device());
    const at::Tensor logits =
        forward(test.points.narrow(0, begin, count).to(context.device()), categories);
    loss_sum += F::cross_entropy(logits, parts, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    const at::Tensor predicted = models::predict_parts(logits, categories, owned);
    correct += predicted.eq(parts).sum().item<double>();
    miou.add(models::shape_part_iou(predicted, parts, categories, owned), categories);
  });
  // Every rank's sums added up: loss, correct points, then the IoU totals.
  std::vector<double> sums = {loss_sum, correct};
  const std::vector<double> miou_sums = miou.sums();
  sums.insert(sums.end(), miou_sums.begin(), miou_sums.end());
  const std::vector<double> totals = context.job().sum(std::move(sums));
  const auto job_miou = models::MiouTotals::from_sums(std::span(totals).subspan(2));
  const auto points = static_cast<double>(test.size() * test.points.size(1));
  return {.mean_loss = totals[0] / points,
          .accuracy = totals[1] / points,
          .extra = {job_miou.instance_miou(), job_miou.class_miou()}};
}

}  // namespace dtrain::apps

#include "segmentation_loop.h"

#include <algorithm>
#include <span>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace F = torch::nn::functional;
using amp::AutocastGuard;

TrainBatches segmentation_batches(const SegmentationForward& forward,
                                  const datasets::LabeledParts& train,
                                  std::optional<datasets::PointCloudAugmentOptions> augment) {
  if (augment) {
    DTRAIN_CHECK(!augment->shuffle_points() && augment->dropout_max() == 0,
                 "segmentation_batches: shuffle points here, where the labels follow, not in "
                 "augment_point_clouds; point dropout would leave the labels behind");
  }
  return {.make =
              [&train, augment](const at::Tensor& index, at::Generator& generator) {
                at::Tensor points = train.points.index_select(0, index);
                at::Tensor parts = train.parts.index_select(0, index);
                if (augment) {
                  const at::Tensor order =
                      at::rand(parts.sizes(), generator).argsort(/*dim=*/int64_t{1});
                  points = points.gather(1, order.unsqueeze(2).expand_as(points));
                  parts = parts.gather(1, order);
                  points = datasets::augment_point_clouds(points, *augment, generator);
                }
                return Batch{points, parts, train.categories.index_select(0, index)};
              },
          .loss =
              [forward](const Batch& batch) {
                return F::cross_entropy(forward(batch[0], batch[2]), batch[1]);
              }};
}

const std::vector<std::string>& segmentation_metric_names() {
  static const std::vector<std::string> names = {"instance_miou", "class_miou"};
  return names;
}

EvalStats segmentation_evaluate(const SegmentationForward& forward, torch::nn::Module& module,
                                const datasets::LabeledParts& test,
                                const models::CategoryParts& owned, const LoopSettings& settings,
                                const Job& job) {
  module.eval();
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(settings.autocast());
  const int64_t first = test.size() * job.rank / job.world;
  const int64_t last = test.size() * (job.rank + 1) / job.world;
  models::MiouTotals miou(static_cast<int64_t>(owned.size()));
  double loss_sum = 0;
  double correct = 0;
  for (int64_t begin = first; begin < last; begin += settings.eval_batch) {
    const int64_t count = std::min(settings.eval_batch, last - begin);
    const at::Tensor categories = test.categories.narrow(0, begin, count).to(settings.device);
    const at::Tensor parts = test.parts.narrow(0, begin, count).to(settings.device);
    const at::Tensor logits =
        forward(test.points.narrow(0, begin, count).to(settings.device), categories);
    loss_sum += F::cross_entropy(logits, parts, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    const at::Tensor predicted = models::predict_parts(logits, categories, owned);
    correct += predicted.eq(parts).sum().item<double>();
    miou.add(models::shape_part_iou(predicted, parts, categories, owned), categories);
  }
  // Every rank's sums added up: loss, correct points, then the IoU totals.
  std::vector<double> sums = {loss_sum, correct};
  const std::vector<double> miou_sums = miou.sums();
  sums.insert(sums.end(), miou_sums.begin(), miou_sums.end());
  const std::vector<double> totals = job.sum(std::move(sums));
  const auto job_miou = models::MiouTotals::from_sums(std::span(totals).subspan(2));
  const auto points = static_cast<double>(test.size() * test.points.size(1));
  return {.mean_loss = totals[0] / points,
          .accuracy = totals[1] / points,
          .extra = {job_miou.instance_miou(), job_miou.class_miou()}};
}

}  // namespace dtrain::apps

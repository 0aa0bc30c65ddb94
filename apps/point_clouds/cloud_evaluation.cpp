#include "cloud_evaluation.h"

#include <numbers>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/train/step_seeds.h"

namespace dtrain::apps {

namespace F = torch::nn::functional;

namespace {

constexpr double kScaleMin = 0.8;
constexpr double kScaleMax = 1.25;

// (B, 3, 3) rotations about the up axis and (B,) scales, one per sample.
std::pair<at::Tensor, at::Tensor> draws(int64_t first, int64_t count, int64_t copy,
                                        const Voting& voting) {
  at::Tensor rotations = at::zeros({count, 3, 3}, at::kDouble);
  at::Tensor scales = at::empty({count}, at::kDouble);
  auto r = rotations.accessor<double, 3>();
  auto s = scales.accessor<double, 1>();
  const int64_t up = voting.up_axis;
  const int64_t a = (up + 1) % 3;
  const int64_t b = (up + 2) % 3;
  for (int64_t i = 0; i < count; ++i) {
    at::Generator generator = train::sample_generator(voting.seed, copy, first + i);
    const at::Tensor u = at::rand({2}, generator, at::kDouble);
    const double angle = 2 * std::numbers::pi * u.data_ptr<double>()[0];
    s[i] = kScaleMin + (kScaleMax - kScaleMin) * u.data_ptr<double>()[1];
    r[i][up][up] = 1.0;
    r[i][a][a] = std::cos(angle);
    r[i][a][b] = -std::sin(angle);
    r[i][b][a] = std::sin(angle);
    r[i][b][b] = std::cos(angle);
  }
  return {rotations, scales};
}

}  // namespace

at::Tensor voting_copy(const at::Tensor& clouds, int64_t first, int64_t copy,
                       const Voting& voting) {
  if (copy == 0) {
    return clouds;
  }
  const auto [rotations, scales] = draws(first, clouds.size(0), copy, voting);
  const at::Tensor r = rotations.to(clouds.device(), clouds.scalar_type()).transpose(1, 2);
  const at::Tensor s = scales.to(clouds.device(), clouds.scalar_type()).view({-1, 1, 1});
  const at::Tensor xyz = at::bmm(clouds.narrow(2, 0, 3), r) * s;
  if (clouds.size(2) == 3) {
    return xyz;
  }
  // Normals turn with the cloud; scaling leaves them as they are.
  const at::Tensor normals = at::bmm(clouds.narrow(2, 3, 3), r);
  return at::cat({xyz, normals, clouds.narrow(2, 6, clouds.size(2) - 6)}, 2);
}

const std::vector<std::string>& cloud_report_columns() {
  static const std::vector<std::string> columns{"mean_class_accuracy"};
  return columns;
}

CloudEvaluation evaluate_clouds(const Forward& forward, const LabeledTensors& test,
                                int64_t num_classes, const Voting& voting,
                                const train::EvalContext& context, bool with_predictions) {
  train::ConfusionMatrix confusion(num_classes);
  double loss_sum = 0;
  // Each sample's prediction plus one at its index, zero elsewhere: summed
  // over the ranks, every sample's from the rank that scored it.
  std::vector<double> predicted(with_predictions ? static_cast<std::size_t>(test.size()) : 0, 0.0);
  context.for_each_batch(test.size(), [&](int64_t begin, int64_t count) {
    const at::Tensor clouds = test.inputs.narrow(0, begin, count).to(context.device());
    const at::Tensor labels = test.labels.narrow(0, begin, count).to(context.device());
    at::Tensor logits = forward(clouds).to(at::kFloat);
    for (int64_t copy = 1; copy < voting.votes; ++copy) {
      logits = logits + forward(voting_copy(clouds, begin, copy, voting)).to(at::kFloat);
    }
    logits = logits / static_cast<double>(voting.votes);
    loss_sum +=
        F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    const at::Tensor classes = logits.argmax(1);
    confusion.add(classes, labels);
    if (with_predictions) {
      const at::Tensor on_cpu = classes.to(at::kCPU, at::kLong).contiguous();
      const int64_t* chosen = on_cpu.data_ptr<int64_t>();
      for (int64_t i = 0; i < count; ++i) {
        predicted[static_cast<std::size_t>(begin + i)] = static_cast<double>(chosen[i] + 1);
      }
    }
  });
  std::vector<double> sums = confusion.sums();
  sums.push_back(loss_sum);
  sums.insert(sums.end(), predicted.begin(), predicted.end());
  const std::vector<double> totals = context.job().sum(std::move(sums));
  const auto cells = static_cast<std::size_t>(num_classes * num_classes);
  CloudEvaluation result{.stats = {},
                         .confusion = train::ConfusionMatrix::from_sums(
                             num_classes, std::span<const double>(totals.data(), cells)),
                         .predictions = {}};
  for (std::size_t i = cells + 1; i < totals.size(); ++i) {
    result.predictions.push_back(static_cast<int64_t>(totals[i]) - 1);
  }
  const auto n = static_cast<double>(std::max<int64_t>(test.size(), 1));
  result.stats = {.mean_loss = totals[cells] / n,
                  .accuracy = result.confusion.overall_accuracy(),
                  .extra = {result.confusion.mean_class_accuracy()}};
  return result;
}

}  // namespace dtrain::apps

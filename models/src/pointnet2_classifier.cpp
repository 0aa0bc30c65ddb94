#include "dtrain/models/pointnet2_classifier.h"

#include <sstream>

#include <ATen/ATen.h>
#include <torch/nn/functional/activation.h>
#include <torch/utils.h>

#include "dtrain/kernels/pointnet2.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/util/errors.h"

namespace dtrain::models {

namespace {

constexpr const char* kModelName = "PointNet2Cls";

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) {
    text += (text.empty() ? "" : "\n") + line;
  }
  return text;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

// The description in a checkpoint's notes; throws naming what is missing.
PointNet2Description described(const train::CheckpointNotes& notes, const std::string& path) {
  const auto model = notes.find("model");
  DTRAIN_CHECK_AS(IOError, model != notes.end(), "checkpoint '", path,
                  "' does not say which model it holds (no notes: not written by "
                  "train_pointnet2, or by a version before they were kept)");
  DTRAIN_CHECK_AS(IOError, model->second == kModelName, "checkpoint '", path, "' holds a ",
                  model->second, " model, not a PointNet++ classifier (", kModelName, ")");
  for (const char* key : {"preset", "classes", "num_points", "normals"}) {
    DTRAIN_CHECK_AS(IOError, notes.contains(key), "checkpoint '", path, "' lacks the note '", key,
                    "' that describes its model");
  }
  PointNet2Description description{.preset = notes.at("preset"),
                                   .class_names = split_lines(notes.at("classes")),
                                   .normals = notes.at("normals") == "true"};
  try {
    description.num_points = std::stoll(notes.at("num_points"));
  } catch (const std::exception&) {
    throw IOError(detail::concat("checkpoint '", path, "': its note num_points '",
                                 notes.at("num_points"), "' is not a number"));
  }
  DTRAIN_CHECK_AS(IOError, description.num_points > 0 && description.class_names.size() >= 2,
                  "checkpoint '", path, "' describes no usable model (", description.num_points,
                  " points, ", description.class_names.size(), " classes)");
  return description;
}

// Centred on its centroid and scaled into the unit sphere; normals kept.
at::Tensor normalised(const at::Tensor& cloud) {
  at::Tensor xyz = cloud.narrow(1, 0, 3);
  xyz = xyz - xyz.mean(0, /*keepdim=*/true);
  const double radius = xyz.norm(2, 1).max().item<double>();
  xyz = xyz / (radius > 0 ? radius : 1.0);
  return cloud.size(1) > 3 ? at::cat({xyz, cloud.narrow(1, 3, cloud.size(1) - 3)}, 1) : xyz;
}

// The rows kept: furthest point sampling down to `count`, repeats up to it.
at::Tensor resampled(const at::Tensor& cloud, int64_t count) {
  const int64_t given = cloud.size(0);
  if (given == count) {
    return cloud;
  }
  if (given < count) {
    return cloud.index_select(0, at::arange(count, at::kLong).remainder(given));
  }
  const at::Tensor xyz = cloud.narrow(1, 0, 3).contiguous().unsqueeze(0);
  const at::Tensor picks = kernels::furthest_point_sample(xyz, count).squeeze(0).to(at::kLong);
  return cloud.index_select(0, picks);
}

}  // namespace

train::CheckpointNotes pointnet2_cls_notes(const PointNet2Description& description) {
  return {{"model", kModelName},
          {"preset", description.preset},
          {"classes", joined_lines(description.class_names)},
          {"num_points", std::to_string(description.num_points)},
          {"normals", description.normals ? "true" : "false"}};
}

PointNet2Classifier::PointNet2Classifier(PointNet2Cls model, PointNet2Description description,
                                         c10::Device device)
    : model_(std::move(model)), description_(std::move(description)), device_(device) {}

PointNet2Classifier PointNet2Classifier::load(const std::string& checkpoint, c10::Device device) {
  PointNet2Description description =
      described(train::read_checkpoint_progress(checkpoint).notes, checkpoint);
  PointNet2Cls model(pointnet2_cls_preset(description.preset,
                                          static_cast<int64_t>(description.class_names.size()),
                                          description.normals ? 3 : 0));
  model->to(device);
  train::load_model_checkpoint(checkpoint, *model);
  model->eval();
  return PointNet2Classifier(std::move(model), std::move(description), device);
}

at::Tensor PointNet2Classifier::prepare(const at::Tensor& cloud) const {
  DTRAIN_CHECK(cloud.dim() == 2 && cloud.size(0) >= 1 && cloud.size(1) >= 3,
               "PointNet2Classifier: a cloud is (points, 3 or 6), got ", cloud.sizes());
  const int64_t columns = description_.normals ? 6 : 3;
  DTRAIN_CHECK(cloud.size(1) >= columns,
               "the model takes normals (x y z nx ny nz), and the cloud has only x y z");
  const at::Tensor kept = cloud.narrow(1, 0, columns).to(at::kCPU, at::kFloat);
  return resampled(normalised(kept), description_.num_points).contiguous();
}

at::Tensor PointNet2Classifier::probabilities(const at::Tensor& cloud) {
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model_->forward(prepare(cloud).unsqueeze(0).to(device_));
  return torch::nn::functional::softmax(logits.squeeze(0).to(at::kCPU, at::kDouble),
                                        torch::nn::functional::SoftmaxFuncOptions(0));
}

std::vector<ClassGuess> PointNet2Classifier::classify(const at::Tensor& cloud, int64_t top_k) {
  const at::Tensor probability = probabilities(cloud);
  const auto [values, labels] = probability.topk(std::min<int64_t>(top_k, probability.size(0)));
  std::vector<ClassGuess> guesses;
  for (int64_t i = 0; i < labels.size(0); ++i) {
    const int64_t label = labels[i].item<int64_t>();
    guesses.push_back({label, description_.class_names[static_cast<std::size_t>(label)],
                       values[i].item<double>()});
  }
  return guesses;
}

}  // namespace dtrain::models

// A trained PointNet++ classifier, loaded from a checkpoint that
// train_pointnet2 wrote, classifying point clouds one at a time: for
// research code and for predict_pointnet2.
//
//   auto classifier = dtrain::models::PointNet2Classifier::load("out/model.pt", torch::kCPU);
//   at::Tensor cloud = dtrain::datasets::read_point_cloud_file("chair.ply");
//   for (const auto& guess : classifier.classify(cloud, 3)) { guess.name, guess.probability }
//
// A cloud is prepared as the training data was: centred on its centroid and
// scaled into the unit sphere (as ModelNet40's and the synthetic shapes'
// clouds are), then cut to the model's point count by furthest point
// sampling, or padded to it by repeating its points in order; a cloud of
// exactly that count keeps its order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/train/trainer_options.h"

namespace dtrain::models {

// What a checkpoint of a PointNet2Cls must say of it to be loaded without
// the training flags (TrainerOptions::checkpoint_notes): the preset, the
// class names in label order, the points per cloud, whether it takes normals.
struct PointNet2Description {
  std::string preset;
  std::vector<std::string> class_names;
  int64_t num_points = 0;
  bool normals = false;
};
train::CheckpointNotes pointnet2_cls_notes(const PointNet2Description& description);

// One class and the probability the model gives it.
struct ClassGuess {
  int64_t label = 0;
  std::string name;
  double probability = 0;
};

class PointNet2Classifier {
 public:
  // Throws dtrain::IOError naming the file when it is missing, is not a
  // checkpoint, or holds no PointNet++ classifier written with its notes
  // (another model's, or an older file).
  static PointNet2Classifier load(const std::string& checkpoint, c10::Device device);

  // `cloud`: (P, 3) xyz, or (P, 6) with normals, any P >= 1. Returns the
  // (num_points, 3 or 6) float cloud the model takes, on the CPU. Throws
  // dtrain::Error when the model takes normals and the cloud has none.
  at::Tensor prepare(const at::Tensor& cloud) const;
  // Class probabilities (num_classes,) of one cloud, as `prepare` takes it.
  at::Tensor probabilities(const at::Tensor& cloud);
  // The `top_k` most probable classes, most probable first.
  std::vector<ClassGuess> classify(const at::Tensor& cloud, int64_t top_k);

  const PointNet2Description& description() const { return description_; }
  // The network, in evaluation mode (its state dict: train/state_dict.h).
  PointNet2Cls& model() { return model_; }
  c10::Device device() const { return device_; }

 private:
  PointNet2Classifier(PointNet2Cls model, PointNet2Description description, c10::Device device);

  PointNet2Cls model_;
  PointNet2Description description_;
  c10::Device device_;
};

}  // namespace dtrain::models

// dtrain's models are Cloneable, as torch.nn.DataParallel's copies need
// (the seed's first way of training on several GPUs wraps the model it
// trains): clone() gives a model with the same parameters, buffers and
// outputs that shares no storage with the original.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/models/pointnet2_part_seg.h"
#include "dtrain/models/toy_cnn.h"

namespace {

namespace models = dtrain::models;

// `model` has trained a step (so its running statistics are not the
// initial ones); `run` evaluates a model on a fixed input.
void expect_equal_independent_copy(torch::nn::Module& model,
                                   const std::function<at::Tensor(torch::nn::Module&)>& run) {
  model.eval();
  std::shared_ptr<torch::nn::Module> copy = model.clone();
  ASSERT_NE(copy.get(), &model);
  const auto original_parameters = model.named_parameters();
  const auto copied_parameters = copy->named_parameters();
  ASSERT_EQ(copied_parameters.size(), original_parameters.size());
  for (const auto& parameter : original_parameters) {
    const at::Tensor& copied = copied_parameters[parameter.key()];
    EXPECT_TRUE(at::equal(copied, parameter.value())) << parameter.key();
    EXPECT_NE(copied.data_ptr(), parameter.value().data_ptr()) << parameter.key() << " is shared";
    EXPECT_TRUE(copied.requires_grad()) << parameter.key();
  }
  const auto original_buffers = model.named_buffers();
  const auto copied_buffers = copy->named_buffers();
  ASSERT_EQ(copied_buffers.size(), original_buffers.size());
  for (const auto& buffer : original_buffers) {
    EXPECT_TRUE(at::equal(copied_buffers[buffer.key()], buffer.value())) << buffer.key();
  }
  EXPECT_FALSE(copy->is_training()) << "the copy is in the original's mode";
  const at::Tensor expected = run(model);
  EXPECT_TRUE(at::equal(run(*copy), expected));

  // Changing the copy leaves the original as it was.
  {
    torch::NoGradGuard no_grad;
    for (auto& parameter : copy->parameters()) {
      parameter.add_(1);
    }
  }
  EXPECT_TRUE(at::equal(run(model), expected));
  EXPECT_FALSE(at::equal(run(*copy), expected));
}

// One training step's forward, so BatchNorm's running statistics move.
template <typename Module>
void train_forward(Module& model, const at::Tensor& input) {
  model.train();
  torch::NoGradGuard no_grad;
  model.forward(input);
}

TEST(ModelClone, ToyCnn) {
  torch::manual_seed(0);
  models::ToyCnn model(models::ToyCnnOptions().in_channels(1).num_classes(10));
  const at::Tensor images = at::randn({4, 1, 32, 32});
  expect_equal_independent_copy(*model, [&](torch::nn::Module& m) {
    return dynamic_cast<models::ToyCnnImpl&>(m).forward(images);
  });
}

TEST(ModelClone, PointNet2Cls) {
  torch::manual_seed(0);
  models::PointNet2Cls model(models::pointnet2_cls_preset("ssg-lite", 5));
  const at::Tensor points = at::rand({4, 256, 3});
  train_forward(*model, points);
  expect_equal_independent_copy(*model, [&](torch::nn::Module& m) {
    return dynamic_cast<models::PointNet2ClsImpl&>(m).forward(points);
  });
}

TEST(ModelClone, PointNet2PartSeg) {
  torch::manual_seed(0);
  models::PointNet2PartSeg model(
      models::pointnet2_part_seg_preset("ssg-lite", /*num_parts=*/6, /*num_categories=*/2));
  const at::Tensor points = at::rand({4, 256, 3});
  const at::Tensor categories = at::tensor({0, 1, 1, 0}, at::kLong);
  {
    model->train();
    torch::NoGradGuard no_grad;
    model->forward(points, categories);
  }
  expect_equal_independent_copy(*model, [&](torch::nn::Module& m) {
    return dynamic_cast<models::PointNet2PartSegImpl&>(m).forward(points, categories);
  });
}

}  // namespace

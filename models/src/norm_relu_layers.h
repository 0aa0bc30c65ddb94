// The building block every PointNet++ network here repeats: a layer without
// bias (the batch norm's shift replaces it), batch norm, ReLU, and in the
// heads dropout. One function for the set abstraction and feature
// propagation MLPs (1x1 convolutions) and both heads (linear, conv).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>

namespace dtrain::models::detail {

// Appends make_layer(channels, width) -> Norm(width) -> ReLU [-> Dropout] to
// `stack` for each width, and returns the channels after the last. The
// dropout module is there whenever `dropout` is given, even at 0, so the
// parameters' names (and checkpoints) do not depend on its rate.
template <typename Norm, typename MakeLayer>
int64_t append_norm_relu_layers(torch::nn::Sequential& stack, int64_t in_channels,
                                const std::vector<int64_t>& widths, MakeLayer make_layer,
                                std::optional<double> dropout = std::nullopt) {
  int64_t channels = in_channels;
  for (const int64_t width : widths) {
    stack->push_back(make_layer(channels, width));
    stack->push_back(Norm(width));
    stack->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
    if (dropout) {
      stack->push_back(torch::nn::Dropout(*dropout));
    }
    channels = width;
  }
  return channels;
}

}  // namespace dtrain::models::detail

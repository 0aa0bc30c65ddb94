// The precompiled header shared by every dtrain C++ target. Only the
// LibTorch headers dtrain actually uses -- not <torch/torch.h>, which drags
// in the JIT, the data API and serialization of everything. Nothing that
// needs another library to link (spdlog, fmt): every target gets this header.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

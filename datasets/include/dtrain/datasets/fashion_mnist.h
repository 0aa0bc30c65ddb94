// Fashion-MNIST (Zalando): 60,000 training and 10,000 test images of 10
// kinds of clothing, 28x28 grey levels, in IDX files (plain or .gz).
//
// By default the files come from Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist) or the directory in
// DTRAIN_FASHION_MNIST_DIR. Images are padded to 32x32 so the seed
// tutorial's toy CNN runs unchanged with in_channels = 1.
//
//   auto train = dtrain::datasets::load_fashion_mnist(dtrain::datasets::Split::kTrain);
//   train.images  // (60000, 1, 32, 32) float32 in [-1, 1]
//   train.labels  // (60000,) int64 in [0, 9]
//   train.class_names  // "T-shirt/top", "Trouser", ..., "Ankle boot"
#pragma once

#include <string>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include "dtrain/datasets/labeled_images.h"
#include "dtrain/datasets/split.h"

namespace dtrain::datasets {

// $DTRAIN_FASHION_MNIST_DIR when set, else Debian's package directory.
std::string fashion_mnist_default_root();

// True when `root` holds all four IDX files (plain or .gz), e.g. to skip
// work that needs the real data (apt-get install dataset-fashion-mnist).
bool fashion_mnist_installed(const std::string& root = fashion_mnist_default_root());

struct FashionMnistOptions {
  // Directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
  TORCH_ARG(std::string, root) = fashion_mnist_default_root();
  // Zero-pad 28x28 to 32x32 (2 pixels each side) before normalising.
  TORCH_ARG(bool, pad_to_32) = true;
};

// Loads one split, scaled to [-1, 1] as (x/255 - 0.5) / 0.5 like the seed's
// Normalize((0.5,), (0.5,)). Throws dtrain::IOError naming the directory or
// file when one is missing, truncated or inconsistent (image and label
// counts differ, a label is outside 0-9, images are not 28x28).
LabeledImages load_fashion_mnist(Split split, const FashionMnistOptions& options = {});

}  // namespace dtrain::datasets

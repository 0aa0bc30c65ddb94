// Training-time augmentation of image batches, the standard CIFAR recipe
// (torchvision's RandomCrop(32, padding=4) then RandomHorizontalFlip()):
// each image is padded by `pad` pixels on every side, a window of its
// original size is cut at a random offset, and the window is mirrored left
// to right with probability `flip_probability`.
//
//   auto augment = ImageAugmentOptions().pad(4).fill(-1);  // black, for [-1, 1] images
//   at::Tensor batch = augment_images(images, augment, generator);  // images (B, C, H, W)
//
// Every image draws its own offset and its own flip. The input is not
// modified; the result is a new contiguous tensor of the same shape and
// type. Deterministic for a given generator state: the offsets are drawn
// first (only when pad > 0), then the flips (only when flip_probability > 0).
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/arg.h>

namespace dtrain::data {

struct ImageAugmentOptions {
  // Pixels of padding on each side before the random crop; 0 turns the crop
  // off. At most the images' height and width.
  TORCH_ARG(int64_t, pad) = 4;
  // The value of the padding. torchvision pads the raw image with 0 (black);
  // images already normalised to [-1, 1] need -1 for the same black. It must
  // be a value of the images' type: an integer in its range for integer
  // images (0 or 1 for Bool), within its finite range for floating ones
  // (where it is rounded to the type's precision).
  TORCH_ARG(double, fill) = 0;
  // Chance that an image is mirrored left to right; 0 turns flips off.
  TORCH_ARG(double, flip_probability) = 0.5;
};

// Returns an augmented copy of `images` (B, C, H, W, CPU, any type). Draws
// from `generator` (CPU), or the default CPU generator when none is given.
// Throws dtrain::Error naming the argument or option that is out of range,
// including a pad or fill that does not suit the images (see above).
at::Tensor augment_images(const at::Tensor& images, const ImageAugmentOptions& options,
                          std::optional<at::Generator> generator = std::nullopt);

}  // namespace dtrain::data

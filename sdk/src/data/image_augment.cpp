#include "dtrain/data/image_augment.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"

namespace dtrain::data {

namespace {

void check_options(const ImageAugmentOptions& o) {
  DTRAIN_CHECK(o.pad() >= 0, "augment_images: pad must be >= 0, got ", o.pad());
  DTRAIN_CHECK(std::isfinite(o.fill()), "augment_images: fill must be finite, got ", o.fill());
  DTRAIN_CHECK(o.flip_probability() >= 0 && o.flip_probability() <= 1,
               "augment_images: flip_probability must be in [0, 1], got ", o.flip_probability());
}

// The largest finite value of a floating (or complex) type; infinity for
// the types LibTorch converts fills to without a range check.
double largest_finite(at::ScalarType type) {
  switch (type) {
    case at::kDouble:
    case at::kComplexDouble:
      return std::numeric_limits<double>::max();
    case at::kFloat:
    case at::kComplexFloat:
      return std::numeric_limits<float>::max();
    case at::kHalf:
    case at::kComplexHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::max());
    case at::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
    default:
      return std::numeric_limits<double>::infinity();
  }
}

// The padding is made of `fill` in the images' type: it must be a value of
// that type, not one that overflows it or is truncated on the way.
void check_fill(double fill, at::ScalarType type) {
  if (type == at::kBool) {
    DTRAIN_CHECK(fill == 0 || fill == 1, "augment_images: fill must be 0 or 1 for ", type,
                 " images, got ", fill);
  } else if (at::isIntegralType(type, /*includeBool=*/false)) {
    const int bits = static_cast<int>(8 * c10::elementSize(type));
    const bool is_signed = c10::isSignedType(type);
    // [lowest, highest] as integers for the message; as doubles, the bounds
    // -2^(bits-1) and 2^(bits-1) (or 0 and 2^bits) are exact.
    const int64_t lowest = is_signed ? std::numeric_limits<int64_t>::min() >> (64 - bits) : 0;
    const uint64_t highest = is_signed ? std::numeric_limits<int64_t>::max() >> (64 - bits)
                                       : std::numeric_limits<uint64_t>::max() >> (64 - bits);
    const double low = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double high = std::ldexp(1.0, is_signed ? bits - 1 : bits);  // exclusive
    DTRAIN_CHECK(fill == std::trunc(fill) && fill >= low && fill < high,
                 "augment_images: fill must be an integer in [", lowest, ", ", highest, "] for ",
                 type, " images, got ", fill);
  } else {
    const double largest = largest_finite(type);
    DTRAIN_CHECK(std::abs(fill) <= largest, "augment_images: fill must be within [-", largest, ", ",
                 largest, "] for ", type, " images, got ", fill);
  }
}

// A window padded by more than the image itself would mostly be padding.
void check_pad(int64_t pad, int64_t height, int64_t width) {
  DTRAIN_CHECK(pad <= height && pad <= width,
               "augment_images: pad must be <= the images' height and width, got pad ", pad,
               " for ", height, "x", width, " images");
  // pad <= height and width, so this only bites on huge expanded views:
  // the padded size must be an int64_t.
  DTRAIN_CHECK(pad <= (std::numeric_limits<int64_t>::max() - std::max(height, width)) / 2,
               "augment_images: pad ", pad, " overflows the padded size of ", height, "x", width,
               " images");
}

}  // namespace

at::Tensor augment_images(const at::Tensor& images, const ImageAugmentOptions& options,
                          std::optional<at::Generator> generator) {
  DTRAIN_CHECK(images.defined(), "augment_images: images is an undefined tensor");
  DTRAIN_CHECK(images.dim() == 4,
               "augment_images: images must be a (B, C, H, W) tensor, got shape ", images.sizes());
  DTRAIN_CHECK(images.device().is_cpu(), "augment_images: images must be on the CPU, got ",
               images.device());
  check_options(options);
  check_pad(options.pad(), images.size(2), images.size(3));
  check_fill(options.fill(), images.scalar_type());
  const int64_t pad = options.pad();
  const double flip_probability = options.flip_probability();
  if (pad == 0 && flip_probability == 0) {
    return images.clone(at::MemoryFormat::Contiguous);
  }
  const at::Generator gen = generator.value_or(at::detail::getDefaultCPUGenerator());
  const int64_t batch = images.size(0);
  const int64_t channels = images.size(1);
  const int64_t height = images.size(2);
  const int64_t width = images.size(3);

  // Output pixel (y, x) of image b is padded pixel (rows[b][y], cols[b][x]):
  // a window at the image's offset, its columns reversed when it flips. So
  // crop and flip are one gather per axis, with no loop over images.
  at::Tensor rows = at::arange(height, at::kLong).expand({batch, height});
  at::Tensor cols = at::arange(width, at::kLong).expand({batch, width});
  at::Tensor offsets = at::zeros({batch, 2}, at::kLong);  // (row, column) of each window
  if (pad > 0) {
    // Uniform in [0, 2 pad]; pad is where the image itself lies.
    offsets.random_(0, 2 * pad + 1, gen);
  }
  if (flip_probability > 0) {
    const at::Tensor flip =
        at::empty({batch, 1}, at::kDouble).uniform_(0, 1, gen) < flip_probability;
    cols = at::where(flip, (width - 1) - cols, cols);
  }
  rows = rows + offsets.narrow(1, 0, 1);
  cols = cols + offsets.narrow(1, 1, 1);
  const at::Tensor padded =
      pad > 0 ? at::constant_pad_nd(images, {pad, pad, pad, pad}, options.fill()) : images;
  const at::Tensor picked_rows = padded.gather(
      2, rows.view({batch, 1, height, 1}).expand({batch, channels, height, padded.size(3)}));
  return picked_rows
      .gather(3, cols.view({batch, 1, 1, width}).expand({batch, channels, height, width}))
      .contiguous();
}

}  // namespace dtrain::data

#include "dtrain/data/image_augment.h"

#include <cmath>

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

}  // namespace

at::Tensor augment_images(const at::Tensor& images, const ImageAugmentOptions& options,
                          std::optional<at::Generator> generator) {
  DTRAIN_CHECK(images.defined(), "augment_images: images is an undefined tensor");
  DTRAIN_CHECK(images.dim() == 4,
               "augment_images: images must be a (B, C, H, W) tensor, got shape ", images.sizes());
  DTRAIN_CHECK(images.device().is_cpu(), "augment_images: images must be on the CPU, got ",
               images.device());
  check_options(options);
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

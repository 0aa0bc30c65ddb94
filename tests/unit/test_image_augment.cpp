// dtrain::data::augment_images: every output image is a window of its
// padded input (mirrored or not), offsets cover exactly [0, 2 pad], flips
// happen per image, the padding has the fill value, a seed gives one batch,
// and the checks.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <ATen/ATen.h>

#include "dtrain/data/image_augment.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

using dtrain::data::augment_images;
using dtrain::data::ImageAugmentOptions;
using dtrain::testing::expect_error;

at::Tensor zero_padded(const at::Tensor& images, int64_t pad) {
  return at::constant_pad_nd(images, {pad, pad, pad, pad}, 0);
}

// The offset (row, column) of the window of `padded` (C, H + 2p, W + 2p)
// that equals `image` (C, H, W), mirrored left to right first when
// `mirrored`; nullopt when there is none.
std::optional<std::pair<int64_t, int64_t>> window_of(const at::Tensor& image,
                                                     const at::Tensor& padded, bool mirrored) {
  const int64_t h = image.size(1);
  const int64_t w = image.size(2);
  for (int64_t dy = 0; dy + h <= padded.size(1); ++dy) {
    for (int64_t dx = 0; dx + w <= padded.size(2); ++dx) {
      at::Tensor window = padded.narrow(1, dy, h).narrow(2, dx, w);
      if (mirrored) {
        window = window.flip({2});
      }
      if (at::equal(window, image)) {
        return std::make_pair(dy, dx);
      }
    }
  }
  return std::nullopt;
}

TEST(ImageAugment, AllOffIsACopy) {
  const at::Tensor images = at::randn({4, 3, 8, 8});
  const at::Tensor out = augment_images(images, ImageAugmentOptions().pad(0).flip_probability(0));
  EXPECT_TRUE(at::equal(out, images));
  EXPECT_NE(out.data_ptr(), images.data_ptr());
}

TEST(ImageAugment, FlipOnlyMirrorsWholeImagesOneByOne) {
  // Random pixels: no image equals its own mirror.
  const at::Tensor images = at::randn({64, 3, 6, 9});
  const at::Tensor out =
      augment_images(images, ImageAugmentOptions().pad(0), at::detail::createCPUGenerator(1));
  ASSERT_EQ(out.sizes(), images.sizes());
  int kept = 0;
  int mirrored = 0;
  for (int64_t b = 0; b < images.size(0); ++b) {
    if (at::equal(out[b], images[b])) {
      ++kept;
    } else if (at::equal(out[b], images[b].flip({2}))) {
      ++mirrored;
    } else {
      ADD_FAILURE() << "image " << b << " is neither itself nor its mirror";
    }
  }
  EXPECT_GT(kept, 16) << "with probability 0.5, about half of 64 keep their side";
  EXPECT_GT(mirrored, 16);

  const at::Tensor all = augment_images(images, ImageAugmentOptions().pad(0).flip_probability(1));
  EXPECT_TRUE(at::equal(all, images.flip({3})));
}

TEST(ImageAugment, CropIsAWindowOfTheZeroPaddedImage) {
  // Not square, so rows and columns cannot be confused.
  const int64_t pad = 3;
  const at::Tensor images = at::randn({200, 2, 8, 10});
  const at::Tensor out = augment_images(images, ImageAugmentOptions().pad(pad).flip_probability(0),
                                        at::detail::createCPUGenerator(2));
  ASSERT_EQ(out.sizes(), images.sizes());
  const at::Tensor padded = zero_padded(images, pad);
  std::set<int64_t> rows;
  std::set<int64_t> cols;
  for (int64_t b = 0; b < images.size(0); ++b) {
    const auto offset = window_of(out[b], padded[b], /*mirrored=*/false);
    ASSERT_TRUE(offset.has_value()) << "image " << b << " is no window of its padded input";
    rows.insert(offset->first);
    cols.insert(offset->second);
  }
  // 200 images: each of the 7 offsets of an axis is missed with odds (6/7)^200.
  const std::set<int64_t> all = {0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(rows, all) << "row offsets must cover exactly [0, 2 pad]";
  EXPECT_EQ(cols, all) << "column offsets must cover exactly [0, 2 pad]";
}

TEST(ImageAugment, CropAndFlipTogether) {
  const at::Tensor images = at::randn({64, 3, 7, 7});
  const at::Tensor out =
      augment_images(images, ImageAugmentOptions().pad(2), at::detail::createCPUGenerator(3));
  const at::Tensor padded = zero_padded(images, 2);
  int mirrored = 0;
  for (int64_t b = 0; b < images.size(0); ++b) {
    if (window_of(out[b], padded[b], /*mirrored=*/true)) {
      ++mirrored;
    } else {
      EXPECT_TRUE(window_of(out[b], padded[b], /*mirrored=*/false))
          << "image " << b << " is no window of its padded input, mirrored or not";
    }
  }
  EXPECT_GT(mirrored, 16);
  EXPECT_LT(mirrored, 48);
}

TEST(ImageAugment, PaddingHasTheFillValueAndTheTypeIsKept) {
  const at::Tensor images = at::full({32, 1, 4, 4}, 7, at::kByte);
  const at::Tensor out = augment_images(images, ImageAugmentOptions().pad(3).fill(9),
                                        at::detail::createCPUGenerator(4));
  EXPECT_EQ(out.scalar_type(), at::kByte);
  EXPECT_TRUE(((out == 7) | (out == 9)).all().item<bool>());
  EXPECT_TRUE((out == 9).any().item<bool>()) << "no window reached the padding";
  // Every window overlaps the 4x4 image in at least one pixel (offsets up to 2 pad = 6 of 10).
  EXPECT_TRUE((out == 7).flatten(1).any(1).all().item<bool>());
}

TEST(ImageAugment, SameSeedSameBatch) {
  const at::Tensor images = at::randn({16, 3, 8, 8});
  EXPECT_TRUE(at::equal(augment_images(images, {}, at::detail::createCPUGenerator(7)),
                        augment_images(images, {}, at::detail::createCPUGenerator(7))));
  EXPECT_FALSE(at::equal(augment_images(images, {}, at::detail::createCPUGenerator(7)),
                         augment_images(images, {}, at::detail::createCPUGenerator(8))));
  // Without a generator: the default one, which at::manual_seed (torch::manual_seed) seeds.
  at::manual_seed(11);
  const at::Tensor first = augment_images(images, {});
  at::manual_seed(11);
  EXPECT_TRUE(at::equal(first, augment_images(images, {})));
}

TEST(ImageAugment, PadMustNotExceedTheImageSize) {
  const at::Tensor images = at::randn({2, 3, 4, 8});
  // Would allocate terabytes of padding.
  expect_error([&] { augment_images(images, ImageAugmentOptions().pad(1000000)); },
               "pad must be <= the images' height and width, got pad 1000000 for 4x8 images");
  // 2 pad + 1 would overflow int64_t.
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2 + 1;
  expect_error([&] { augment_images(images, ImageAugmentOptions().pad(huge)); },
               "got pad " + std::to_string(huge) + " for 4x8 images");
  // The smaller side (the height here) is the limit.
  expect_error([&] { augment_images(images, ImageAugmentOptions().pad(5)); },
               "got pad 5 for 4x8 images");
  expect_error([&] { augment_images(images.transpose(2, 3), ImageAugmentOptions().pad(5)); },
               "got pad 5 for 8x4 images");
  // A pad equal to the size is allowed.
  const at::Tensor out =
      augment_images(images, ImageAugmentOptions().pad(4), at::detail::createCPUGenerator(5));
  EXPECT_EQ(out.sizes(), images.sizes());
}

TEST(ImageAugment, FillMustBeAValueOfTheImagesType) {
  const at::Tensor bytes = at::full({2, 1, 4, 4}, 7, at::kByte);
  expect_error([&] { augment_images(bytes, ImageAugmentOptions().fill(-1)); },
               "fill must be an integer in [0, 255] for Byte images, got -1");
  expect_error([&] { augment_images(bytes, ImageAugmentOptions().fill(300)); },
               "fill must be an integer in [0, 255] for Byte images, got 300");
  // Would be truncated to 0 without a word.
  expect_error([&] { augment_images(bytes.to(at::kInt), ImageAugmentOptions().fill(0.5)); },
               "fill must be an integer in [-2147483648, 2147483647] for Int images, got 0.5");
  expect_error([&] { augment_images(bytes.to(at::kLong), ImageAugmentOptions().fill(1e19)); },
               "fill must be an integer in [-9223372036854775808, 9223372036854775807] for Long "
               "images, got 1e+19");
  expect_error([&] { augment_images(bytes.to(at::kBool), ImageAugmentOptions().fill(2)); },
               "fill must be 0 or 1 for Bool images, got 2");
  expect_error([&] { augment_images(bytes.to(at::kHalf), ImageAugmentOptions().fill(1e5)); },
               "fill must be within [-65504, 65504] for Half images, got 100000");
  // The ends of a type's range are values of it; floating images round.
  at::Tensor out = augment_images(bytes, ImageAugmentOptions().pad(3).fill(255),
                                  at::detail::createCPUGenerator(6));
  EXPECT_TRUE(((out == 7) | (out == 255)).all().item<bool>());
  out = augment_images(bytes.to(at::kChar), ImageAugmentOptions().pad(3).fill(-128),
                       at::detail::createCPUGenerator(6));
  EXPECT_TRUE(((out == 7) | (out == -128)).all().item<bool>());
  out = augment_images(bytes.to(at::kFloat), ImageAugmentOptions().pad(3).fill(0.1),
                       at::detail::createCPUGenerator(6));
  EXPECT_TRUE((out == static_cast<float>(0.1)).any().item<bool>());
}

TEST(ImageAugment, ChecksNameTheProblem) {
  const at::Tensor images = at::randn({2, 3, 8, 8});
  expect_error(
      [&] {
        augment_images(at::randn({3, 8, 8}), {});
      },
      "images must be a (B, C, H, W) tensor, got shape [3, 8, 8]");
  expect_error([&] { augment_images(at::Tensor(), {}); }, "images is an undefined tensor");
  expect_error([&] { augment_images(images, ImageAugmentOptions().pad(-1)); },
               "pad must be >= 0, got -1");
  expect_error([&] { augment_images(images, ImageAugmentOptions().flip_probability(1.5)); },
               "flip_probability must be in [0, 1], got 1.5");
  expect_error([&] { augment_images(images, ImageAugmentOptions().flip_probability(-0.1)); },
               "flip_probability must be in [0, 1], got -0.1");
  expect_error(
      [&] {
        augment_images(images,
                       ImageAugmentOptions().fill(std::numeric_limits<double>::quiet_NaN()));
      },
      "fill must be finite, got nan");
}

}  // namespace

#include "dtrain/datasets/synthetic_shapes.h"

#include <numeric>
#include <utility>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"
#include "portable_random.h"
#include "shape_surfaces.h"
#include "synthetic_cloud.h"
#include "synthetic_shapes_options.h"

namespace dtrain::datasets {

const std::vector<std::string>& synthetic_shape_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int kind = 0; kind < kNumShapeKinds; ++kind) {
      out.emplace_back(shape_name(static_cast<ShapeKind>(kind)));
    }
    return out;
  }();
  return names;
}

void check_synthetic_shapes_options(const SyntheticShapesOptions& options, const char* caller) {
  DTRAIN_CHECK(options.num_classes() >= 1 && options.num_classes() <= kNumShapeKinds, caller,
               ": num_classes must be from 1 to ", kNumShapeKinds,
               " (the kinds of shape there are), got ", options.num_classes());
  DTRAIN_CHECK(options.train_per_class() >= 1, caller, ": train_per_class must be positive, got ",
               options.train_per_class());
  DTRAIN_CHECK(options.test_per_class() >= 1, caller, ": test_per_class must be positive, got ",
               options.test_per_class());
  DTRAIN_CHECK(options.points_per_cloud() >= 1, caller, ": points_per_cloud must be positive, got ",
               options.points_per_cloud());
  DTRAIN_CHECK(options.shapes_per_file() >= 1, caller, ": shapes_per_file must be positive, got ",
               options.shapes_per_file());
}

const std::vector<std::string>& synthetic_part_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int kind = 0; kind < kNumShapeKinds; ++kind) {
      for (const std::string& part : shape_part_names(static_cast<ShapeKind>(kind))) {
        out.push_back(std::string(shape_name(static_cast<ShapeKind>(kind))) + "/" + part);
      }
    }
    return out;
  }();
  return names;
}

namespace {

// The number of the first part of `kind` in synthetic_part_names().
int64_t first_part(ShapeKind kind) {
  int64_t first = 0;
  for (int k = 0; k < static_cast<int>(kind); ++k) {
    first += static_cast<int64_t>(shape_part_names(static_cast<ShapeKind>(k)).size());
  }
  return first;
}

}  // namespace

SyntheticSplit generate_synthetic_split(Split split, const SyntheticShapesOptions& options,
                                        const char* caller) {
  check_synthetic_shapes_options(options, caller);
  const int64_t per_class =
      split == Split::kTrain ? options.train_per_class() : options.test_per_class();
  const int64_t count = per_class * options.num_classes();
  const int64_t points_per_cloud = options.points_per_cloud();

  // Every cloud draws from a stream of its own, named by (seed, split,
  // class, index in class): a cloud is the same whatever the other options,
  // and the shuffle (stream 0 of the split) moves clouds without changing them.
  const uint64_t split_seed = portable::mix_seed(options.seed(), split == Split::kTrain ? 0 : 1);
  std::vector<int64_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  portable::Random shuffle(portable::mix_seed(split_seed, 0));
  for (std::size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(order[i - 1], order[shuffle.below(i)]);
  }

  SyntheticSplit out;
  LabeledClouds& clouds = out.clouds;
  clouds.points = at::empty({count, points_per_cloud, 3}, at::kFloat);
  clouds.normals = at::empty({count, points_per_cloud, 3}, at::kFloat);
  clouds.labels = at::empty({count}, at::kLong);
  out.parts = at::empty({count, points_per_cloud}, at::kLong);
  float* points = clouds.points.mutable_data_ptr<float>();
  float* normals = clouds.normals.mutable_data_ptr<float>();
  int64_t* labels = clouds.labels.mutable_data_ptr<int64_t>();
  int64_t* parts = out.parts.mutable_data_ptr<int64_t>();
  for (int64_t slot = 0; slot < count; ++slot) {
    const int64_t item = order[static_cast<std::size_t>(slot)];
    const int64_t label = item / per_class;
    const auto index = static_cast<uint64_t>(item % per_class);
    const uint64_t seed =
        portable::mix_seed(portable::mix_seed(split_seed, 1 + static_cast<uint64_t>(label)), index);
    const auto kind = static_cast<ShapeKind>(label);
    const int64_t offset = slot * points_per_cloud * 3;
    int64_t* cloud_parts = parts + slot * points_per_cloud;
    make_cloud(kind, points_per_cloud, seed, points + offset, normals + offset, cloud_parts);
    // The solid's own part numbers, renumbered into synthetic_part_names().
    const int64_t first = first_part(kind);
    for (int64_t i = 0; i < points_per_cloud; ++i) {
      cloud_parts[i] += first;
    }
    labels[slot] = label;
  }
  const auto& names = synthetic_shape_names();
  clouds.class_names.assign(names.begin(), names.begin() + options.num_classes());
  return out;
}

LabeledClouds generate_synthetic_shapes(Split split, const SyntheticShapesOptions& options) {
  return generate_synthetic_split(split, options, "generate_synthetic_shapes").clouds;
}

LabeledParts generate_synthetic_parts(Split split, const SyntheticShapesOptions& options) {
  SyntheticSplit generated = generate_synthetic_split(split, options, "generate_synthetic_parts");
  LabeledParts out;
  out.points = std::move(generated.clouds.points);
  out.categories = std::move(generated.clouds.labels);
  out.parts = std::move(generated.parts);
  out.category_names = std::move(generated.clouds.class_names);
  return out;
}

}  // namespace dtrain::datasets

#include "part_data.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace {

namespace ds = dtrain::datasets;

// The first `limit` clouds (all when limit is 0 or larger than the set).
ds::LabeledParts first(ds::LabeledParts data, int64_t limit) {
  if (limit > 0 && limit < data.size()) {
    data.points = data.points.narrow(0, 0, limit);
    data.categories = data.categories.narrow(0, 0, limit);
    data.parts = data.parts.narrow(0, 0, limit);
  }
  return data;
}

// Both splits from the files, or from memory without HDF5.
std::pair<ds::LabeledParts, ds::LabeledParts> read_splits(const PartSegTrainOptions& options,
                                                          std::string& root) {
  if (synthetic_in_memory(options)) {
    root = "memory";
    const auto synthetic = synthetic_options(options);
    return {ds::first_points(ds::generate_synthetic_parts(ds::Split::kTrain, synthetic),
                             options.num_points),
            ds::first_points(ds::generate_synthetic_parts(ds::Split::kTest, synthetic),
                             options.num_points)};
  }
  auto read = ds::ShapeNetPartH5Options().num_points(options.num_points);
  if (options.data == CloudData::kSynthetic) {
    root = ensure_synthetic_root(options);
    read.num_parts(static_cast<int64_t>(ds::synthetic_part_names().size()));
  } else {
    root = options.data_dir.empty() ? ds::shapenet_part_default_root() : options.data_dir;
    DTRAIN_CHECK(!root.empty(),
                 "--dataset shapenet-part needs --data-dir (or $DTRAIN_SHAPENET_PART_DIR): the "
                 "directory of shapenet_part_seg_hdf5_data with train_hdf5_file_list.txt");
  }
  read.root(root);
  return {ds::load_shapenet_part_h5(ds::Split::kTrain, read),
          ds::load_shapenet_part_h5(ds::Split::kTest, read)};
}

}  // namespace

PartData load_part_data(const PartSegTrainOptions& options) {
  PartData data;
  auto [train, test] = read_splits(options, data.root);
  data.train = first(std::move(train), options.limits.train);
  data.test = first(std::move(test), options.limits.test);
  const auto num_categories = static_cast<int64_t>(data.train.category_names.size());
  data.num_parts =
      1 + std::max(data.train.parts.max().item<int64_t>(), data.test.parts.max().item<int64_t>());
  // The parts each category owns, from the training labels; the test set
  // must not hold others, or its IoU would count parts the model was never
  // shown for that category.
  data.owned = models::category_parts(data.train.categories, data.train.parts, num_categories);
  const models::CategoryParts in_test =
      models::category_parts(data.test.categories, data.test.parts, num_categories);
  for (std::size_t c = 0; c < in_test.size(); ++c) {
    for (const int64_t part : in_test[c]) {
      DTRAIN_CHECK(std::binary_search(data.owned[c].begin(), data.owned[c].end(), part),
                   "the test set holds part ", part, " in category '", data.train.category_names[c],
                   "', which no training cloud of that category has (use more training clouds: "
                   "--train-limit)");
    }
  }
  return data;
}

}  // namespace dtrain::apps

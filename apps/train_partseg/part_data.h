// The clouds train_partseg trains on, as its flags choose them.
#pragma once

#include <cstdint>
#include <string>

#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/models/part_segmentation_metrics.h"
#include "train_options.h"

namespace dtrain::apps {

struct PartData {
  datasets::LabeledParts train;  // points (N, num_points, 3)
  datasets::LabeledParts test;
  int64_t num_parts = 0;        // the model's outputs: the largest part label + 1
  models::CategoryParts owned;  // the parts each category owns, as the training set shows
  std::string root;             // where the files are
};

// The synthetic shapes (written first when missing; safe for several ranks
// at once) or ShapeNet-Part's HDF5 files, limited by --train-limit and
// --test-limit. Throws dtrain::IOError naming the directory or file when
// the data cannot be read, and dtrain::Error when the test set holds a
// part its category never shows in training.
PartData load_part_data(const PartSegTrainOptions& options);

}  // namespace dtrain::apps

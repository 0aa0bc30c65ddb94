// The fingerprint of a training set's labels that the processes of a job
// compare: equal for equal labels, different for any change of a value, of
// their order or of a shape.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dtrain/train/labels_fingerprint.h"

namespace {

using dtrain::train::labels_fingerprint;

TEST(LabelsFingerprint, EqualLabelsAgreeAndAnyChangeShows) {
  const at::Tensor labels = at::arange(1000, at::kLong) % 40;
  const std::string fingerprint = labels_fingerprint({labels});
  EXPECT_EQ(fingerprint.size(), 16u);
  EXPECT_EQ(labels_fingerprint({labels.clone()}), fingerprint);
  // The same values in another dtype, or strided: the values count.
  EXPECT_EQ(labels_fingerprint({labels.to(at::kInt)}), fingerprint);
  EXPECT_EQ(labels_fingerprint({at::stack({labels, labels}, 1).select(1, 0)}), fingerprint);

  for (const int64_t at_index : {0, 1, 500, 999}) {
    at::Tensor changed = labels.clone();
    changed[at_index] = (changed[at_index].item<int64_t>() + 1) % 40;
    EXPECT_NE(labels_fingerprint({changed}), fingerprint) << "label " << at_index;
  }
  at::Tensor swapped = labels.clone();
  swapped[3] = labels[4].item<int64_t>();
  swapped[4] = labels[3].item<int64_t>();
  EXPECT_NE(labels_fingerprint({swapped}), fingerprint);
  EXPECT_NE(labels_fingerprint({labels.narrow(0, 0, 999)}), fingerprint);
  EXPECT_NE(labels_fingerprint({labels.view({10, 100})}), fingerprint);
  // Tensors count in order, each with its own shape.
  const at::Tensor parts = at::arange(60, at::kLong).view({3, 20}) % 7;
  EXPECT_NE(labels_fingerprint({labels, parts}), labels_fingerprint({parts, labels}));
  EXPECT_NE(labels_fingerprint({labels, parts}), fingerprint);
  EXPECT_EQ(labels_fingerprint({at::Tensor()}), labels_fingerprint({at::empty({0}, at::kLong)}));
}

}  // namespace

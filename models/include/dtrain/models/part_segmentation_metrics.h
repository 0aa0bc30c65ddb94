// The metrics of part segmentation as PointNet and PointNet++ report them
// on ShapeNet-Part: every object belongs to a category that owns some of
// the part labels (an airplane's body, wings, tail and engines), a shape's
// IoU is the mean over its category's parts of |predicted ∩ true| /
// |predicted ∪ true|, counting a part that is neither predicted nor
// present as 1, and
//   instance mIoU = the mean of the shapes' IoUs,
//   class mIoU    = the mean over categories of their shapes' mean IoU.
//
//   const auto owned = category_parts(train.categories, train.parts, num_categories);
//   MiouTotals totals(num_categories);
//   for each batch:
//     at::Tensor predicted = predict_parts(logits, categories, owned);      // (B, N)
//     totals.add(shape_part_iou(predicted, parts, categories, owned), categories);
//   totals.instance_miou(), totals.class_miou()
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::models {

// The part labels each category owns, ascending: owned[c] for category c.
using CategoryParts = std::vector<std::vector<int64_t>>;

// The parts that occur in shapes of each category, read off labelled data:
// categories (N,) int64 in [0, num_categories), parts (N, P) int64 >= 0.
// A category with no shapes owns no parts. Throws dtrain::Error naming the
// argument for bad shapes, types or values.
CategoryParts category_parts(const at::Tensor& categories, const at::Tensor& parts,
                             int64_t num_categories);

// Each point's most likely part among those its shape's category owns (the
// convention of PointNet++'s evaluation: the category is known, so parts of
// other categories are never predicted). logits (B, num_parts, N) of any
// floating type, categories (B,) -> (B, N) int64. Throws dtrain::Error
// when a category owns no parts or a part lies outside num_parts.
at::Tensor predict_parts(const at::Tensor& logits, const at::Tensor& categories,
                         const CategoryParts& owned);

// Every shape's IoU over its category's parts: predicted and parts (B, N)
// int64, categories (B,) -> (B,) float64 in [0, 1]. A predicted label the
// category does not own counts against the true part of that point.
at::Tensor shape_part_iou(const at::Tensor& predicted, const at::Tensor& parts,
                          const at::Tensor& categories, const CategoryParts& owned);

// Sums of shape IoUs over batches (and ranks): overall and per category.
class MiouTotals {
 public:
  explicit MiouTotals(int64_t num_categories);

  // Adds shape IoUs (B,) float64, as shape_part_iou returns them, of shapes
  // of `categories` (B,) int64, on any device.
  void add(const at::Tensor& iou, const at::Tensor& categories);

  // The sums as one vector, to add up over ranks (all_reduce), and back:
  // [shapes, IoU sum, each category's IoU sum, each category's shapes].
  std::vector<double> sums() const;
  static MiouTotals from_sums(std::span<const double> sums);

  int64_t shapes() const { return static_cast<int64_t>(shapes_); }
  // The mean over shapes; 0 before any.
  double instance_miou() const;
  // The mean over categories with shapes of their shapes' mean; 0 before any.
  double class_miou() const;

 private:
  double shapes_ = 0;
  double iou_sum_ = 0;
  std::vector<double> category_iou_;
  std::vector<double> category_shapes_;
};

}  // namespace dtrain::models

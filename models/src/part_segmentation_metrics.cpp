#include "dtrain/models/part_segmentation_metrics.h"

#include <algorithm>
#include <limits>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"

namespace dtrain::models {

namespace {

void check_labels(const at::Tensor& tensor, int64_t dims, const char* name, const char* caller) {
  DTRAIN_CHECK(tensor.defined() && tensor.dim() == dims && tensor.scalar_type() == at::kLong,
               caller, ": ", name, " must be a ", dims, "-d int64 tensor, got ",
               tensor.defined() ? tensor.toString() : "an undefined tensor",
               tensor.defined() ? " of shape " : "",
               tensor.defined() ? c10::str(tensor.sizes()) : "");
}

void check_categories(const at::Tensor& categories, int64_t batch, const CategoryParts& owned,
                      const char* caller) {
  check_labels(categories, 1, "categories", caller);
  DTRAIN_CHECK(categories.size(0) == batch, caller, ": categories has ", categories.size(0),
               " entries but the batch holds ", batch, " shapes");
  if (batch == 0) {
    return;
  }
  const auto [lowest, highest] = at::aminmax(categories);
  const int64_t low = lowest.item<int64_t>();
  const int64_t high = highest.item<int64_t>();
  DTRAIN_CHECK(low >= 0 && high < static_cast<int64_t>(owned.size()), caller,
               ": categories must lie in [0, ", owned.size(), "), the categories whose parts are ",
               "known, got ", low < 0 ? low : high);
}

// (categories, K) bool: which of the first K part labels each category owns.
at::Tensor ownership_mask(const CategoryParts& owned, int64_t num_parts, const char* caller) {
  at::Tensor mask = at::zeros({static_cast<int64_t>(owned.size()), num_parts}, at::kBool);
  auto rows = mask.accessor<bool, 2>();
  for (std::size_t c = 0; c < owned.size(); ++c) {
    for (const int64_t part : owned[c]) {
      DTRAIN_CHECK(part >= 0 && part < num_parts, caller, ": category ", c, " owns part ", part,
                   ", outside [0, ", num_parts, ")");
      rows[static_cast<int64_t>(c)][part] = true;
    }
  }
  return mask;
}

int64_t largest_owned_part(const CategoryParts& owned) {
  int64_t largest = -1;
  for (const auto& parts : owned) {
    for (const int64_t part : parts) {
      largest = std::max(largest, part);
    }
  }
  return largest;
}

}  // namespace

CategoryParts category_parts(const at::Tensor& categories, const at::Tensor& parts,
                             int64_t num_categories) {
  constexpr const char* kCaller = "category_parts";
  DTRAIN_CHECK(num_categories >= 1, kCaller, ": num_categories must be positive, got ",
               num_categories);
  check_labels(parts, 2, "parts", kCaller);
  CategoryParts owned(static_cast<std::size_t>(num_categories));
  check_categories(categories, parts.size(0), owned, kCaller);
  if (parts.numel() == 0) {
    return owned;
  }
  const int64_t lowest = parts.min().item<int64_t>();
  DTRAIN_CHECK(lowest >= 0, kCaller, ": part labels must not be negative, got ", lowest);
  // One count per (category, part) pair: category * K + part.
  const int64_t num_parts = parts.max().item<int64_t>() + 1;
  const at::Tensor keys = (categories.unsqueeze(1) * num_parts + parts).reshape({-1});
  const at::Tensor counts =
      at::bincount(keys, {}, num_categories * num_parts).reshape({num_categories, num_parts});
  const auto seen = counts.accessor<int64_t, 2>();
  for (int64_t c = 0; c < num_categories; ++c) {
    for (int64_t part = 0; part < num_parts; ++part) {
      if (seen[c][part] > 0) {
        owned[static_cast<std::size_t>(c)].push_back(part);
      }
    }
  }
  return owned;
}

at::Tensor predict_parts(const at::Tensor& logits, const at::Tensor& categories,
                         const CategoryParts& owned) {
  constexpr const char* kCaller = "predict_parts";
  DTRAIN_CHECK(logits.defined() && logits.dim() == 3 && at::isFloatingType(logits.scalar_type()),
               kCaller, ": logits must be a floating (B, num_parts, N) tensor, got ",
               logits.defined() ? c10::str(logits.toString(), " of shape ", logits.sizes())
                                : "an undefined tensor");
  check_categories(categories, logits.size(0), owned, kCaller);
  const at::Tensor mask = ownership_mask(owned, logits.size(1), kCaller);
  const at::Tensor shape_mask = mask.index_select(0, categories.cpu());  // (B, num_parts)
  DTRAIN_CHECK(logits.size(0) == 0 || shape_mask.any(1).all().item<bool>(), kCaller,
               ": a shape's category owns no parts, so none can be predicted");
  return logits
      .masked_fill(shape_mask.logical_not().unsqueeze(2).to(logits.device()),
                   -std::numeric_limits<double>::infinity())
      .argmax(1);
}

at::Tensor shape_part_iou(const at::Tensor& predicted, const at::Tensor& parts,
                          const at::Tensor& categories, const CategoryParts& owned) {
  constexpr const char* kCaller = "shape_part_iou";
  check_labels(predicted, 2, "predicted", kCaller);
  check_labels(parts, 2, "parts", kCaller);
  DTRAIN_CHECK(predicted.sizes() == parts.sizes(), kCaller, ": predicted has shape ",
               predicted.sizes(), " but parts has shape ", parts.sizes());
  check_categories(categories, parts.size(0), owned, kCaller);
  if (parts.numel() == 0) {
    return at::ones({parts.size(0)}, at::kDouble);
  }
  const int64_t lowest = std::min(predicted.min().item<int64_t>(), parts.min().item<int64_t>());
  DTRAIN_CHECK(lowest >= 0, kCaller, ": part labels must not be negative, got ", lowest);
  const int64_t num_parts =
      1 + std::max({largest_owned_part(owned), predicted.max().item<int64_t>(),
                    parts.max().item<int64_t>()});
  const at::Tensor shape_mask =
      ownership_mask(owned, num_parts, kCaller).index_select(0, categories.cpu());  // (B, K)
  DTRAIN_CHECK(shape_mask.any(1).all().item<bool>(), kCaller,
               ": a shape's category owns no parts, so it has no IoU");
  const at::Tensor is_predicted = at::one_hot(predicted.cpu(), num_parts).to(at::kBool);
  const at::Tensor is_true = at::one_hot(parts.cpu(), num_parts).to(at::kBool);
  const at::Tensor intersection = is_predicted.logical_and(is_true).sum(1).to(at::kDouble);
  const at::Tensor union_ = is_predicted.logical_or(is_true).sum(1).to(at::kDouble);
  // A part neither present nor predicted was segmented perfectly: IoU 1.
  const at::Tensor iou = at::where(union_.eq(0), at::ones_like(union_), intersection / union_);
  const at::Tensor counted = shape_mask.to(at::kDouble);
  return (iou * counted).sum(1) / counted.sum(1);
}

MiouTotals::MiouTotals(int64_t num_categories)
    : category_iou_(static_cast<std::size_t>(num_categories), 0.0),
      category_shapes_(static_cast<std::size_t>(num_categories), 0.0) {
  DTRAIN_CHECK(num_categories >= 1, "MiouTotals: num_categories must be positive, got ",
               num_categories);
}

void MiouTotals::add(const at::Tensor& iou, const at::Tensor& categories) {
  DTRAIN_CHECK(iou.defined() && iou.dim() == 1 && iou.scalar_type() == at::kDouble,
               "MiouTotals::add: iou must be a 1-d float64 tensor (shape_part_iou's)");
  const CategoryParts by_category(category_iou_.size());
  check_categories(categories, iou.size(0), by_category, "MiouTotals::add");
  const at::Tensor values = iou.cpu();
  const at::Tensor labels = categories.cpu();
  const auto value = values.accessor<double, 1>();
  const auto label = labels.accessor<int64_t, 1>();
  for (int64_t i = 0; i < values.size(0); ++i) {
    const auto c = static_cast<std::size_t>(label[i]);
    category_iou_[c] += value[i];
    category_shapes_[c] += 1;
    iou_sum_ += value[i];
    shapes_ += 1;
  }
}

std::vector<double> MiouTotals::sums() const {
  std::vector<double> out = {shapes_, iou_sum_};
  out.insert(out.end(), category_iou_.begin(), category_iou_.end());
  out.insert(out.end(), category_shapes_.begin(), category_shapes_.end());
  return out;
}

MiouTotals MiouTotals::from_sums(std::span<const double> sums) {
  DTRAIN_CHECK(sums.size() >= 4 && sums.size() % 2 == 0,
               "MiouTotals::from_sums: expected 2 + 2 x categories values, got ", sums.size());
  const auto categories = static_cast<int64_t>((sums.size() - 2) / 2);
  MiouTotals totals(categories);
  totals.shapes_ = sums[0];
  totals.iou_sum_ = sums[1];
  std::copy(sums.begin() + 2, sums.begin() + 2 + categories, totals.category_iou_.begin());
  std::copy(sums.begin() + 2 + categories, sums.end(), totals.category_shapes_.begin());
  return totals;
}

double MiouTotals::instance_miou() const {
  return shapes_ > 0 ? iou_sum_ / shapes_ : 0;
}

double MiouTotals::class_miou() const {
  double sum = 0;
  int seen = 0;
  for (std::size_t c = 0; c < category_iou_.size(); ++c) {
    if (category_shapes_[c] > 0) {
      sum += category_iou_[c] / category_shapes_[c];
      ++seen;
    }
  }
  return seen > 0 ? sum / seen : 0;
}

}  // namespace dtrain::models

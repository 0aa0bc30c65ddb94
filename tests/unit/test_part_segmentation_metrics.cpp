// dtrain::models' part-segmentation metrics against hand-worked cases and
// a loop over every shape and part written from the definition.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dtrain/models/part_segmentation_metrics.h"
#include "expect_error.h"

namespace {

using dtrain::models::category_parts;
using dtrain::models::CategoryParts;
using dtrain::models::MiouTotals;
using dtrain::models::predict_parts;
using dtrain::models::shape_part_iou;
using dtrain::testing::expect_error;

at::Tensor longs(std::vector<int64_t> values) {
  return at::tensor(values, at::kLong);
}

at::Tensor rows(const std::vector<std::vector<int64_t>>& values) {
  std::vector<at::Tensor> out;
  for (const auto& row : values) {
    out.push_back(longs(row));
  }
  return at::stack(out);
}

// The definition, one shape and one part at a time.
std::vector<double> reference_iou(const at::Tensor& predicted, const at::Tensor& parts,
                                  const at::Tensor& categories, const CategoryParts& owned) {
  std::vector<double> out;
  for (int64_t shape = 0; shape < parts.size(0); ++shape) {
    const auto& mine = owned[categories[shape].item<int64_t>()];
    double sum = 0;
    for (const int64_t part : mine) {
      int64_t both = 0;
      int64_t either = 0;
      for (int64_t point = 0; point < parts.size(1); ++point) {
        const bool is_predicted = predicted[shape][point].item<int64_t>() == part;
        const bool is_true = parts[shape][point].item<int64_t>() == part;
        both += is_predicted && is_true;
        either += is_predicted || is_true;
      }
      sum += either == 0 ? 1.0 : static_cast<double>(both) / static_cast<double>(either);
    }
    out.push_back(sum / static_cast<double>(mine.size()));
  }
  return out;
}

TEST(CategoryParts, CollectsThePartsSeenInEachCategory) {
  const auto owned = category_parts(longs({0, 1, 0}), rows({{0, 0, 1}, {3, 4, 4}, {2, 1, 1}}), 3);
  EXPECT_EQ(owned, (CategoryParts{{0, 1, 2}, {3, 4}, {}}));
}

TEST(PredictParts, ChoosesOnlyAmongTheCategorysParts) {
  const CategoryParts owned{{0, 1}, {2, 3}};
  // Two shapes of two points; part 2 has the highest logit everywhere.
  at::Tensor logits = at::zeros({2, 4, 2});
  logits.select(1, 2).fill_(10);
  logits[0][1][0] = 1;   // shape 0 (category 0): point 0 -> part 1, point 1 -> tie -> part 0
  logits[1][3][1] = 20;  // shape 1 (category 1): point 0 -> part 2, point 1 -> part 3
  const at::Tensor predicted = predict_parts(logits, longs({0, 1}), owned);
  EXPECT_TRUE(at::equal(predicted, rows({{1, 0}, {2, 3}}))) << predicted;
  // The same under bf16 logits.
  EXPECT_TRUE(at::equal(predict_parts(logits.to(at::kBFloat16), longs({0, 1}), owned), predicted));
}

TEST(ShapePartIou, HandWorkedCases) {
  const CategoryParts owned{{0, 1}, {0, 1, 2}};
  const at::Tensor parts = rows({{0, 0, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}});
  const at::Tensor predicted = rows({
      {0, 1, 1, 1},  // part 0: 1 of 2; part 1: 2 of 3
      {0, 0, 1, 1},  // exact; part 2 neither present nor predicted counts 1
      {5, 0, 1, 1},  // a part of no category: part 0 gets 1 of 2
  });
  const at::Tensor iou = shape_part_iou(predicted, parts, longs({0, 1, 0}), owned);
  ASSERT_EQ(iou.scalar_type(), at::kDouble);
  EXPECT_NEAR(iou[0].item<double>(), (0.5 + 2.0 / 3.0) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(iou[1].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(iou[2].item<double>(), 0.75);
}

TEST(ShapePartIou, MatchesTheDefinitionOnRandomLabels) {
  at::manual_seed(3);
  const CategoryParts owned{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}};
  const at::Tensor categories = at::randint(0, 3, {40}, at::kLong);
  // True and predicted labels drawn from each shape's own parts, and a few strays.
  const at::Tensor first = longs({0, 3, 5}).index_select(0, categories).unsqueeze(1);
  const at::Tensor count = longs({3, 2, 4}).index_select(0, categories).unsqueeze(1);
  const at::Tensor parts = first + at::randint(0, 1000, {40, 32}, at::kLong) % count;
  at::Tensor predicted = first + at::randint(0, 1000, {40, 32}, at::kLong) % count;
  predicted.masked_fill_(at::rand({40, 32}).lt(0.05), 8);
  const at::Tensor iou = shape_part_iou(predicted, parts, categories, owned);
  const auto expected = reference_iou(predicted, parts, categories, owned);
  for (int64_t shape = 0; shape < 40; ++shape) {
    EXPECT_NEAR(iou[shape].item<double>(), expected[static_cast<std::size_t>(shape)], 1e-12)
        << "shape " << shape;
  }
}

// Instance mIoU weighs shapes, class mIoU categories: three shapes, two of
// category 0 (IoU 1 and 0.5) and one of category 1 (0.2), category 2 none.
TEST(MiouTotals, InstanceAndClassMeans) {
  MiouTotals totals(3);
  EXPECT_EQ(totals.instance_miou(), 0.0);
  totals.add(at::tensor({1.0, 0.5}, at::kDouble), longs({0, 0}));
  totals.add(at::tensor({0.2}, at::kDouble), longs({1}));
  EXPECT_EQ(totals.shapes(), 3);
  EXPECT_DOUBLE_EQ(totals.instance_miou(), 1.7 / 3);
  EXPECT_DOUBLE_EQ(totals.class_miou(), (0.75 + 0.2) / 2) << "category 2 has no shapes";
}

// Sums added up elementwise (as all_reduce does over ranks) give the
// totals of all the shapes.
TEST(MiouTotals, SumsOfPartsMakeTheWhole) {
  MiouTotals first(2);
  first.add(at::tensor({1.0, 0.5}, at::kDouble), longs({0, 0}));
  MiouTotals second(2);
  second.add(at::tensor({0.2, 0.4}, at::kDouble), longs({1, 0}));
  std::vector<double> sums = first.sums();
  const std::vector<double> more = second.sums();
  ASSERT_EQ(sums.size(), 6u);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i] += more[i];
  }
  const MiouTotals whole = MiouTotals::from_sums(sums);
  EXPECT_EQ(whole.shapes(), 4);
  EXPECT_DOUBLE_EQ(whole.instance_miou(), 2.1 / 4);
  EXPECT_DOUBLE_EQ(whole.class_miou(), (1.9 / 3 + 0.2) / 2);
}

TEST(PartSegmentationMetrics, BadInputIsNamed) {
  const CategoryParts owned{{0, 1}, {}};
  expect_error(
      [&] {
        category_parts(longs({0, 3}), rows({{0}, {1}}), 2);
      },
      "category_parts: categories must lie in [0, 2)");
  expect_error([&] { category_parts(longs({0}), rows({{-1}}), 2); },
               "category_parts: part labels must not be negative, got -1");
  expect_error(
      [&] {
        category_parts(longs({0}), at::zeros({1, 2}), 2);
      },
      "category_parts: parts must be a 2-d int64 tensor");
  expect_error(
      [&] {
        predict_parts(at::zeros({1, 2, 3}), longs({1}), owned);
      },
      "predict_parts: a shape's category owns no parts");
  expect_error(
      [&] {
        predict_parts(at::zeros({1, 1, 3}), longs({0}), owned);
      },
      "predict_parts: category 0 owns part 1, outside [0, 1)");
  expect_error(
      [&] {
        shape_part_iou(rows({{0, 1}}), rows({{0}}), longs({0}), owned);
      },
      "shape_part_iou: predicted has shape [1, 2] but parts has shape [1, 1]");
  expect_error(
      [&] {
        shape_part_iou(rows({{0}}), rows({{0}}), longs({0, 0}), owned);
      },
      "shape_part_iou: categories has 2 entries but the batch holds 1 shapes");
  MiouTotals totals(2);
  expect_error([&] { totals.add(at::tensor({0.5}, at::kDouble), longs({2})); },
               "MiouTotals::add: categories must lie in [0, 2)");
  expect_error([&] { totals.add(at::tensor({0.5f}), longs({0})); },
               "MiouTotals::add: iou must be a 1-d float64 tensor");
  expect_error(
      [&] {
        MiouTotals::from_sums(std::vector<double>{1, 2, 3});
      },
      "MiouTotals::from_sums: expected 2 + 2 x categories values, got 3");
}

}  // namespace

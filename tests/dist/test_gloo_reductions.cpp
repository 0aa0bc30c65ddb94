// The Gloo backend's reductions -- all_reduce, reduce to every root and
// reduce_scatter -- for every dtype it takes and every op (SUM, PRODUCT,
// MIN, MAX, and AVG for floating types), against values computed here.
// Each rank brings different values per element, so a result taken from
// the wrong rank, element or block shows.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/dist/init.h"
#include "expect_error.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dist::ReduceOp;

const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                             at::kInt,   at::kLong,   at::kByte};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
                                    ReduceOp::kMax, ReduceOp::kAvg};
constexpr int64_t kElements = 6;

// Rank `rank`'s value at element `i` (< 24): 1, 2 or 3, so that a product
// of four ranks (81 at most) fits uint8 and every sum and product is exact
// in float16. The scrambling makes every element differ between the ranks
// of each world size, and each rank's four blocks of kElements differ.
double value(int rank, int64_t i) {
  return 1 + (rank * 24 + i) * 17 % 97 % 3;
}

at::Tensor values(int rank, int64_t first, at::ScalarType dtype) {
  at::Tensor t = at::empty({kElements}, at::kDouble);
  for (int64_t i = 0; i < kElements; ++i) {
    t[i] = value(rank, first + i);
  }
  return t.to(dtype);
}

// What `op` over every rank's values(rank, first) gives, in double.
at::Tensor expected(ReduceOp op, int world, int64_t first) {
  at::Tensor result = values(0, first, at::kDouble);
  for (int rank = 1; rank < world; ++rank) {
    const at::Tensor other = values(rank, first, at::kDouble);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        result = result + other;
        break;
      case ReduceOp::kProduct:
        result = result * other;
        break;
      case ReduceOp::kMin:
        result = at::minimum(result, other);
        break;
      case ReduceOp::kMax:
        result = at::maximum(result, other);
        break;
    }
  }
  return op == ReduceOp::kAvg ? result / world : result;
}

// Integers exactly; an average in float16 or bfloat16 within its rounding.
bool matches(const at::Tensor& got, const at::Tensor& want) {
  const bool half = got.scalar_type() == at::kHalf || got.scalar_type() == at::kBFloat16;
  return at::allclose(got.to(at::kDouble), want, half ? 1e-2 : 1e-6, 0);
}

// Runs `body` for every dtype and op the backend takes, and checks that it
// refuses AVG of integers, naming it, before talking to any peer.
void for_every_dtype_and_op(const std::function<void(at::ScalarType, ReduceOp)>& body,
                            const std::function<void(at::ScalarType)>& avg_of_integers) {
  for (const auto dtype : kDtypes) {
    for (const auto op : kOps) {
      if (op == ReduceOp::kAvg && !at::isFloatingType(dtype)) {
        dtrain::testing::expect_error([&] { avg_of_integers(dtype); },
                                      "AVG needs a floating-point tensor");
      } else {
        body(dtype, op);
      }
    }
  }
}

std::string case_name(at::ScalarType dtype, ReduceOp op) {
  return std::string("dtype ") + c10::toString(dtype) + " op " + dist::to_string(op);
}

class GlooReductions : public ::testing::TestWithParam<int> {};

TEST_P(GlooReductions, AllReduceEveryOpAndDtype) {
  dtrain::testing::run_gloo_ranks(GetParam(), 60s, [](int rank, int world) {
    for_every_dtype_and_op(
        [&](at::ScalarType dtype, ReduceOp op) {
          at::Tensor t = values(rank, 0, dtype);
          dist::all_reduce(t, op);
          EXPECT_EQ(t.scalar_type(), dtype);
          EXPECT_TRUE(matches(t, expected(op, world, 0))) << case_name(dtype, op) << ": got " << t;
        },
        [&](at::ScalarType dtype) {
          at::Tensor t = values(rank, 0, dtype);
          dist::all_reduce(t, ReduceOp::kAvg);
        });
  });
}

// The root gets the result; every other rank keeps its own values.
TEST_P(GlooReductions, ReduceToEveryRootEveryOpAndDtype) {
  dtrain::testing::run_gloo_ranks(GetParam(), 60s, [](int rank, int world) {
    for_every_dtype_and_op(
        [&](at::ScalarType dtype, ReduceOp op) {
          for (int root = 0; root < world; ++root) {
            at::Tensor t = values(rank, 0, dtype);
            dist::reduce(t, root, op);
            const at::Tensor want =
                rank == root ? expected(op, world, 0) : values(rank, 0, at::kDouble);
            EXPECT_TRUE(matches(t, want))
                << case_name(dtype, op) << " to " << root << ": got " << t;
          }
        },
        [&](at::ScalarType dtype) {
          at::Tensor t = values(rank, 0, dtype);
          dist::reduce(t, 0, ReduceOp::kAvg);
        });
  });
}

// Rank r's block j holds values(r, j * kElements); rank j gets block j reduced.
TEST_P(GlooReductions, ReduceScatterEveryOpAndDtype) {
  dtrain::testing::run_gloo_ranks(GetParam(), 60s, [](int rank, int world) {
    auto blocks = [&](at::ScalarType dtype) {
      std::vector<at::Tensor> inputs;
      for (int j = 0; j < world; ++j) {
        inputs.push_back(values(rank, j * kElements, dtype));
      }
      return inputs;
    };
    for_every_dtype_and_op(
        [&](at::ScalarType dtype, ReduceOp op) {
          at::Tensor mine = at::zeros({kElements}, dtype);
          dist::reduce_scatter(mine, blocks(dtype), op);
          EXPECT_TRUE(matches(mine, expected(op, world, rank * kElements)))
              << case_name(dtype, op) << ": got " << mine;
        },
        [&](at::ScalarType dtype) {
          at::Tensor mine = at::zeros({kElements}, dtype);
          dist::reduce_scatter(mine, blocks(dtype), ReduceOp::kAvg);
        });
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooReductions, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace

// The cases of collective_conformance.h. Every expected value is computed
// here from the rank and the world size; each rank brings different values
// per element, so a result taken from the wrong rank, element or block
// shows.
#include "collective_conformance.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "dtrain/dist/init.h"
#include "dtrain/dist/same_settings.h"
#include "expect_error.h"

namespace dtrain::testing {
namespace {

namespace dist = dtrain::dist;
using dist::ReduceOp;

// Every dtype the backends take.
const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                             at::kInt,   at::kLong,   at::kByte};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
                                    ReduceOp::kMax, ReduceOp::kAvg};
constexpr int64_t kElements = 6;

std::vector<int> all_ranks(int world) {
  std::vector<int> ranks(world);
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

// "0, 2, 3"
std::string joined(const std::vector<int>& ranks) {
  std::string text;
  for (const int rank : ranks) {
    text += (text.empty() ? "" : ", ") + std::to_string(rank);
  }
  return text;
}

// ---- Reductions --------------------------------------------------------

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
// `got` may live on the case's device, `want` on the CPU.
bool matches(const at::Tensor& got, const at::Tensor& want) {
  const bool half = got.scalar_type() == at::kHalf || got.scalar_type() == at::kBFloat16;
  return got.sizes() == want.sizes() &&
         at::allclose(got.cpu().to(at::kDouble), want.cpu().to(at::kDouble), half ? 1e-2 : 1e-6, 0);
}

// Exactly equal, wherever each lives.
bool same(const at::Tensor& got, const at::Tensor& want) {
  return at::equal(got.cpu(), want.cpu());
}

// Options for a tensor of the case: on its device.
at::TensorOptions on(const CollectiveWorld& w, at::ScalarType dtype = at::kFloat) {
  return at::TensorOptions().dtype(dtype).device(w.device);
}

// Runs `body` for every dtype and op, and checks that AVG of integers is
// refused, naming it, before any peer is contacted.
void for_every_dtype_and_op(const std::function<void(at::ScalarType, ReduceOp)>& body,
                            const std::function<void(at::ScalarType)>& avg_of_integers) {
  for (const auto dtype : kDtypes) {
    for (const auto op : kOps) {
      if (op == ReduceOp::kAvg && !at::isFloatingType(dtype)) {
        expect_error([&] { avg_of_integers(dtype); }, "AVG needs a floating-point tensor");
      } else {
        body(dtype, op);
      }
    }
  }
}

std::string case_name(at::ScalarType dtype, ReduceOp op) {
  return std::string("dtype ") + c10::toString(dtype) + " op " + dist::to_string(op);
}

void all_reduce_every_op_and_dtype(const CollectiveWorld& w) {
  for_every_dtype_and_op(
      [&](at::ScalarType dtype, ReduceOp op) {
        at::Tensor t = values(w.rank, 0, dtype).to(w.device);
        dist::all_reduce(t, op);
        EXPECT_EQ(t.scalar_type(), dtype);
        EXPECT_TRUE(matches(t, expected(op, w.world, 0))) << case_name(dtype, op) << ": got " << t;
      },
      [&](at::ScalarType dtype) {
        at::Tensor t = values(w.rank, 0, dtype).to(w.device);
        dist::all_reduce(t, ReduceOp::kAvg);
      });
}

// The root gets the result; every other rank keeps its own values.
void reduce_to_every_root_every_op_and_dtype(const CollectiveWorld& w) {
  for_every_dtype_and_op(
      [&](at::ScalarType dtype, ReduceOp op) {
        for (int root = 0; root < w.world; ++root) {
          at::Tensor t = values(w.rank, 0, dtype).to(w.device);
          dist::reduce(t, root, op);
          const at::Tensor want =
              w.rank == root ? expected(op, w.world, 0) : values(w.rank, 0, at::kDouble);
          EXPECT_TRUE(matches(t, want)) << case_name(dtype, op) << " to " << root << ": got " << t;
        }
      },
      [&](at::ScalarType dtype) {
        at::Tensor t = values(w.rank, 0, dtype).to(w.device);
        dist::reduce(t, 0, ReduceOp::kAvg);
      });
}

// Rank r's block j holds values(r, j * kElements); rank j gets block j reduced.
void reduce_scatter_every_op_and_dtype(const CollectiveWorld& w) {
  auto blocks = [&](at::ScalarType dtype) {
    std::vector<at::Tensor> inputs;
    for (int j = 0; j < w.world; ++j) {
      inputs.push_back(values(w.rank, j * kElements, dtype).to(w.device));
    }
    return inputs;
  };
  for_every_dtype_and_op(
      [&](at::ScalarType dtype, ReduceOp op) {
        at::Tensor mine = at::zeros({kElements}, on(w, dtype));
        dist::reduce_scatter(mine, blocks(dtype), op);
        EXPECT_TRUE(matches(mine, expected(op, w.world, w.rank * kElements)))
            << case_name(dtype, op) << ": got " << mine;
      },
      [&](at::ScalarType dtype) {
        at::Tensor mine = at::zeros({kElements}, on(w, dtype));
        dist::reduce_scatter(mine, blocks(dtype), ReduceOp::kAvg);
      });
}

// ---- Data movement -----------------------------------------------------

void rooted_collectives_from_every_root(const CollectiveWorld& w) {
  const int rank = w.rank;
  const int world = w.world;
  const auto f = on(w);
  for (int root = 0; root < world; ++root) {
    at::Tensor b = at::arange(5, f) + 10 * rank;
    dist::broadcast(b, root);
    EXPECT_TRUE(same(b, at::arange(5, f) + 10 * root)) << "broadcast from " << root;
    // reduce: the root gets the sum, the others keep their tensor
    at::Tensor r = at::full({3}, rank + 1, f);
    dist::reduce(r, root, ReduceOp::kSum);
    EXPECT_TRUE(same(r, at::full({3}, rank == root ? world * (world + 1) / 2 : rank + 1, f)))
        << "reduce to " << root << ": " << r;
    // gather: only the root passes outputs
    std::vector<at::Tensor> gathered;
    for (int i = 0; rank == root && i < world; ++i) {
      gathered.push_back(at::empty({2}, f));
    }
    dist::gather(at::full({2}, rank * 3, f), gathered, root);
    for (int i = 0; rank == root && i < world; ++i) {
      EXPECT_TRUE(same(gathered[i], at::full({2}, i * 3, f))) << "gather to " << root;
    }
    // scatter: only the root passes inputs
    std::vector<at::Tensor> pieces;
    for (int i = 0; rank == root && i < world; ++i) {
      pieces.push_back(at::full({2, 2}, i * 2 + 1, f));
    }
    at::Tensor piece = at::empty({2, 2}, f);
    dist::scatter(piece, pieces, root);
    EXPECT_TRUE(same(piece, at::full({2, 2}, rank * 2 + 1, f))) << "scatter from " << root;
  }
  // Every dtype moves (float16 and bfloat16 as bytes the backend carries).
  for (const auto dtype : kDtypes) {
    const auto o = on(w, dtype);
    at::Tensor b = at::full({4}, rank + 2, o);
    dist::broadcast(b, world - 1);
    EXPECT_TRUE(matches(b, at::full({4}, world + 1, at::kDouble))) << "broadcast " << dtype;
    std::vector<at::Tensor> gathered;
    for (int i = 0; rank == 0 && i < world; ++i) {
      gathered.push_back(at::empty({3}, o));
    }
    dist::gather(at::full({3}, rank, o), gathered, 0);
    for (int i = 0; rank == 0 && i < world; ++i) {
      EXPECT_TRUE(matches(gathered[i], at::full({3}, i, at::kDouble)))
          << "gather " << dtype << " block " << i;
    }
    std::vector<at::Tensor> pieces;
    for (int i = 0; rank == 0 && i < world; ++i) {
      pieces.push_back(at::full({3}, i + 1, o));
    }
    at::Tensor piece = at::empty({3}, o);
    dist::scatter(piece, pieces, 0);
    EXPECT_TRUE(matches(piece, at::full({3}, rank + 1, at::kDouble))) << "scatter " << dtype;
  }
}

void all_gather_and_all_to_all_every_dtype(const CollectiveWorld& w) {
  for (const auto dtype : kDtypes) {
    const auto o = on(w, dtype);
    std::vector<at::Tensor> all(w.world);
    for (auto& t : all) {
      t = at::empty({3}, o);
    }
    dist::all_gather(all, at::full({3}, w.rank + 1, o));
    for (int i = 0; i < w.world; ++i) {
      EXPECT_TRUE(matches(all[i], at::full({3}, i + 1, at::kDouble)))
          << "all_gather " << dtype << " block " << i;
    }
    std::vector<at::Tensor> sends;
    std::vector<at::Tensor> receives;
    for (int i = 0; i < w.world; ++i) {
      sends.push_back(at::full({4}, w.rank * 10 + i, o));
      receives.push_back(at::empty({4}, o));
    }
    dist::all_to_all(receives, sends);
    for (int i = 0; i < w.world; ++i) {
      EXPECT_TRUE(matches(receives[i], at::full({4}, i * 10 + w.rank, at::kDouble)))
          << "all_to_all " << dtype << " from " << i;
    }
  }
  dist::barrier();
}

// Strings of different lengths, an empty one and bytes a C string would
// end at: each rank's comes back whole, in rank order, on every rank.
void all_gather_strings_of_any_length(const CollectiveWorld& w) {
  auto value_of = [](int r) {
    return r == 0 ? std::string()
                  : std::string(static_cast<size_t>(5 * r), 'a' + r) + std::string(1, '\0') +
                        "rank " + std::to_string(r);
  };
  const std::vector<std::string> all = dist::all_gather_strings(value_of(w.rank));
  ASSERT_EQ(all.size(), static_cast<size_t>(w.world));
  for (int r = 0; r < w.world; ++r) {
    EXPECT_EQ(all[r], value_of(r)) << "rank " << r << "'s string";
  }
  // All empty: nothing to pad.
  EXPECT_EQ(dist::all_gather_strings(""), std::vector<std::string>(w.world));
}

// Settings that agree pass; one rank's other value stops every rank with
// the same message, naming the setting, the values, their ranks and the
// advice.
void check_same_settings_stops_every_rank_naming_the_difference(const CollectiveWorld& w) {
  dist::check_same_settings({{"--epochs", "5"}, {"--lr", "0.001"}});
  // Text only: refused on every rank before any rank is contacted.
  expect_error(
      [] {
        dist::check_same_settings({{"--tag", std::string("a\0b", 3)}});
      },
      "check_same_settings: setting '--tag' holds a NUL byte in its value");
  const int last = w.world - 1;
  expect_error(
      [&] {
        dist::check_same_settings({{"--epochs", w.rank == last ? "3" : "5"}, {"--lr", "0.001"}},
                                  "give them the same flags");
      },
      "the processes of this job were started with different settings: --epochs: \"5\" on " +
          std::string(w.world == 2 ? "rank 0" : "ranks 0-" + std::to_string(last - 1)) +
          ", \"3\" on rank " + std::to_string(last) + ". give them the same flags");
}

// ---- Point to point ----------------------------------------------------

void point_to_point_ring_and_out_of_order(const CollectiveWorld& w) {
  const int next = (w.rank + 1) % w.world;
  const int prev = (w.rank + w.world - 1) % w.world;
  // A ring: everyone posts its receive asynchronously, then sends.
  at::Tensor in = at::empty({6}, on(w, at::kLong));
  auto receiving = dist::irecv(in, prev);
  dist::send(at::full({6}, w.rank, on(w, at::kLong)), next);
  receiving->wait();
  EXPECT_TRUE(same(in, at::full({6}, prev, at::kLong))) << "ring from " << prev << ": " << in;
  // Two tagged messages, sent in one order, waited in the other.
  if (w.rank == 0) {
    at::Tensor late_data = at::full({2}, 2.0, on(w));
    at::Tensor early_data = at::full({2}, 1.0, on(w));
    auto late = dist::isend(late_data, 1, nullptr, /*tag=*/2);
    auto early = dist::isend(early_data, 1, nullptr, /*tag=*/1);
    early->wait();
    late->wait();
  } else if (w.rank == 1) {
    at::Tensor one = at::empty({2}, on(w));
    at::Tensor two = at::empty({2}, on(w));
    auto w2 = dist::irecv(two, 0, nullptr, 2);
    auto w1 = dist::irecv(one, 0, nullptr, 1);
    w1->wait();
    w2->wait();
    EXPECT_TRUE(w1->is_completed() && w2->is_completed());
    EXPECT_TRUE(same(one, at::full({2}, 1.0))) << "tag 1: " << one;
    EXPECT_TRUE(same(two, at::full({2}, 2.0))) << "tag 2: " << two;
  }
  dist::barrier();
}

// A receive whose sender's tensor is smaller says so, with both sizes
// (Note [A size beside every message] on Gloo), and the pair still works.
void a_smaller_message_than_the_receive_is_named(const CollectiveWorld& w) {
  if (w.rank == 0) {
    dist::send(at::ones({3}, on(w)), 1, nullptr, 7);
    dist::send(at::full({2}, 5.0, on(w)), 1, nullptr, 7);
  } else if (w.rank == 1) {
    at::Tensor bigger = at::empty({4}, on(w));
    expect_error<dist::CollectiveError>(
        [&] { dist::recv(bigger, 0, nullptr, 7); },
        "recv from rank 0 on group 'default' (" + w.backend + "), rank 1 of " +
            std::to_string(w.world) +
            ": received 12 bytes, expected 16 (the sender's tensor has a different size or "
            "dtype)");
    at::Tensor next = at::empty({2}, on(w));
    dist::recv(next, 0, nullptr, 7);
    EXPECT_TRUE(same(next, at::full({2}, 5.0))) << "the message after: " << next;
  }
  dist::barrier();
}

void empty_non_contiguous_and_async(const CollectiveWorld& w) {
  at::Tensor empty = at::empty({0}, on(w));
  dist::all_reduce(empty);
  dist::broadcast(empty, 0);
  EXPECT_EQ(empty.numel(), 0);
  std::vector<at::Tensor> empties;
  for (int i = 0; i < w.world; ++i) {
    empties.push_back(at::empty({0}, on(w)));
  }
  dist::all_gather(empties, at::empty({0}, on(w)));
  if (w.rank == 0) {
    dist::send(empty, 1);
  } else if (w.rank == 1) {
    dist::recv(empty, 0);
  }
  // A transposed view: reduced in place through a contiguous copy.
  at::Tensor base = at::arange(6, on(w)).view({2, 3}) * (w.rank + 1);
  at::Tensor view = base.t();
  dist::all_reduce(view);
  EXPECT_TRUE(same(base, at::arange(6, at::kFloat).view({2, 3}) * (w.world * (w.world + 1) / 2)))
      << base;
  // Several async collectives in flight. They run one at a time in issue
  // order, so once the last is waited on, every earlier one has finished
  // too, no later than the next, without a wait of its own. (A wait with a
  // timeout waits on the host on every backend; NCCL's plain wait() only
  // orders the caller's stream.)
  std::vector<at::Tensor> tensors;
  std::vector<dist::WorkPtr> works;
  for (int i = 0; i < 5; ++i) {
    tensors.push_back(at::full({100000}, i + w.rank, on(w)));
    works.push_back(dist::all_reduce(tensors.back(), ReduceOp::kMax, nullptr, /*async_op=*/true));
  }
  works.back()->wait(std::chrono::seconds(60));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(works[i]->is_completed()) << "async all_reduce " << i;
    EXPECT_EQ(works[i]->exception(), nullptr);
    EXPECT_TRUE(same(tensors[i], at::full({100000}, i + w.world - 1, at::kFloat)))
        << "async all_reduce " << i;
    if (i > 0) {
      EXPECT_LE(*works[i - 1]->finish_time(), *works[i]->finish_time()) << "async " << i;
    }
  }
}

// ---- Groups ------------------------------------------------------------

void sub_groups(const CollectiveWorld& w) {
  const int rank = w.rank;
  const int world = w.world;
  // The seed's example: all_reduce within the group of ranks 0 and 1.
  auto pair = dist::new_group({0, 1});
  // Every rank but 0 (group ranks are positions in the sorted list).
  std::vector<int> tail;
  for (int r = 1; r < world; ++r) {
    tail.push_back(r);
  }
  auto rest = dist::new_group(tail);
  EXPECT_EQ(pair != nullptr, rank <= 1);
  EXPECT_EQ(rest != nullptr, rank >= 1);
  if (pair) {
    at::Tensor t = at::ones({1}, on(w));
    dist::all_reduce(t, ReduceOp::kSum, pair);
    EXPECT_EQ(t.item<float>(), 2.0f);
    EXPECT_EQ(pair->rank(), rank);
    EXPECT_EQ(pair->size(), 2);
    EXPECT_EQ(pair->backend_name(), w.backend);
  }
  if (rest) {
    at::Tensor t = at::full({1}, rank, on(w));
    dist::all_reduce(t, ReduceOp::kSum, rest);
    EXPECT_EQ(t.item<float>(), (world - 1) * world / 2.0f);
    EXPECT_EQ(rest->rank(), rank - 1);
    at::Tensor from_first = at::full({1}, rank, on(w));
    dist::broadcast(from_first, 1, rest);  // global rank 1, the group's rank 0
    EXPECT_EQ(from_first.item<float>(), 1.0f);
  }
  // A group of every rank works like the default one.
  auto everyone = dist::new_group(all_ranks(world));
  at::Tensor t = at::full({2}, rank + 1.0, on(w));
  dist::all_reduce(t, ReduceOp::kProduct, everyone);
  EXPECT_EQ(everyone->rank(), rank);
  double factorial = 1;
  for (int r = 1; r <= world; ++r) {
    factorial *= r;
  }
  EXPECT_TRUE(same(t, at::full({2}, factorial))) << t;
  dist::barrier();
}

// torch.distributed's convention: the free functions take the default
// group's ranks, also with a smaller group. The group is every rank but 1,
// so its group rank i > 0 is global rank i + 1.
void roots_and_peers_are_global_ranks(const CollectiveWorld& w) {
  const int rank = w.rank;
  std::vector<int> members = all_ranks(w.world);
  members.erase(members.begin() + 1);
  std::vector<int> given(members.rbegin(), members.rend());  // in any order, as torch allows
  auto group = dist::new_group(given);
  ASSERT_EQ(group != nullptr, rank != 1);
  if (!group) {
    dist::barrier();
    return;
  }
  const int size = static_cast<int>(members.size());
  const std::string in_group =
      "group '" + group->name() + "' (global ranks " + joined(members) + ")";
  EXPECT_EQ(dist::get_process_group_ranks(group), members);
  EXPECT_EQ(dist::get_group_rank(group, members.back()), size - 1);
  EXPECT_EQ(dist::get_global_rank(group, 1), 2);
  EXPECT_EQ(dist::get_global_rank(nullptr, 1), 1);
  expect_error([&] { dist::get_group_rank(group, 1); }, "rank 1 is not a member of " + in_group);
  expect_error([&] { dist::get_global_rank(group, size); },
               "rank " + std::to_string(size) + " is outside group '" + group->name() + "'");
  const auto f = on(w);
  const int member_sum = std::accumulate(members.begin(), members.end(), 0);
  for (const int root : members) {
    at::Tensor b = at::full({2}, rank, f);
    dist::broadcast(b, root, group);
    EXPECT_TRUE(same(b, at::full({2}, root, f))) << "broadcast from " << root;
    at::Tensor r = at::full({1}, rank, f);
    dist::reduce(r, root, ReduceOp::kSum, group);
    EXPECT_EQ(r.item<float>(), rank == root ? member_sum : rank) << "reduce to " << root;
    std::vector<at::Tensor> gathered;
    for (int i = 0; rank == root && i < size; ++i) {
      gathered.push_back(at::empty({1}, f));
    }
    dist::gather(at::full({1}, rank, f), gathered, root, group);
    for (int i = 0; rank == root && i < size; ++i) {
      EXPECT_EQ(gathered[i].item<float>(), members[i]) << "gather to " << root;
    }
    std::vector<at::Tensor> pieces;
    for (int i = 0; rank == root && i < size; ++i) {
      pieces.push_back(at::full({1}, 10 * members[i], f));
    }
    at::Tensor piece = at::empty({1}, f);
    dist::scatter(piece, pieces, root, group);
    EXPECT_EQ(piece.item<float>(), 10 * rank) << "scatter from " << root;
  }
  // Point to point between the last rank and 0, through the group.
  if (rank == members.back()) {
    dist::send(at::full({3}, 7.0, f), 0, group, /*tag=*/5);
  } else if (rank == 0) {
    at::Tensor received = at::zeros({3}, f);
    dist::recv(received, members.back(), group, /*tag=*/5);
    EXPECT_TRUE(same(received, at::full({3}, 7.0))) << received;
  }
  // A rank outside the group is refused before anything is sent; the
  // group's own methods still take group ranks.
  at::Tensor t = at::full({1}, rank, f);
  expect_error([&] { dist::broadcast(t, 1, group); },
               "broadcast: src 1 is not a member of " + in_group);
  expect_error([&] { dist::reduce(t, 1, ReduceOp::kSum, group); }, "reduce: dst 1 is not a member");
  expect_error([&] { dist::send(t, 1, group); }, "send: dst 1 is not a member");
  group->broadcast(t, {.root = 1})->wait();
  EXPECT_EQ(t.item<float>(), 2.0f);
  dist::barrier();
}

// ---- Errors ------------------------------------------------------------

// Each is refused on the calling rank alone: no peer takes part, and the
// group works afterwards.
void bad_inputs_name_the_problem_without_talking_to_peers(const CollectiveWorld& w) {
  const std::string world = std::to_string(w.world);
  at::Tensor ints = at::ones({2}, on(w, at::kInt));
  expect_error([&] { dist::all_reduce(ints, ReduceOp::kAvg); },
               "AVG needs a floating-point tensor");
  at::Tensor f = at::ones({2}, on(w));
  const std::string outside = std::to_string(w.world + 3);
  expect_error([&] { dist::broadcast(f, w.world + 3); },
               "root " + outside + " is outside the group of size " + world);
  expect_error([&] { dist::send(f, w.rank); }, "must be another rank");
  expect_error([&] { dist::send(f, (w.rank + 1) % w.world, nullptr, -1); }, "tag must be");
  at::Tensor bools = at::ones({2}, on(w, at::kBool));
  expect_error([&] { dist::all_reduce(bools); }, w.backend + " supports float32");
  std::vector<at::Tensor> one = {at::empty({2}, on(w))};
  expect_error([&] { dist::all_gather(one, f); }, "outputs must hold " + world + " tensors");
  dist::all_reduce(f);
  EXPECT_TRUE(same(f, at::full({2}, static_cast<float>(w.world)))) << "after errors: " << f;
}

}  // namespace

const std::vector<CollectiveCase>& collective_conformance_cases() {
  static const std::vector<CollectiveCase> cases = {
      {"AllReduceEveryOpAndDtype", 2, all_reduce_every_op_and_dtype, ""},
      {"ReduceToEveryRootEveryOpAndDtype", 2, reduce_to_every_root_every_op_and_dtype, ""},
      {"ReduceScatterEveryOpAndDtype", 2, reduce_scatter_every_op_and_dtype, ""},
      {"RootedCollectivesFromEveryRoot", 2, rooted_collectives_from_every_root, ""},
      {"AllGatherAndAllToAllEveryDtype", 2, all_gather_and_all_to_all_every_dtype, ""},
      {"AllGatherStringsOfAnyLength", 2, all_gather_strings_of_any_length, ""},
      {"CheckSameSettingsStopsEveryRankNamingTheDifference", 2,
       check_same_settings_stops_every_rank_naming_the_difference, ""},
      {"PointToPointRingAndOutOfOrder", 2, point_to_point_ring_and_out_of_order, ""},
      {"ASmallerMessageThanTheReceiveIsNamed", 2, a_smaller_message_than_the_receive_is_named,
       "an NCCL message carries no size its receiver could check"},
      {"EmptyNonContiguousAndAsync", 2, empty_non_contiguous_and_async, ""},
      {"SubGroups", 2, sub_groups, ""},
      {"RootsAndPeersAreGlobalRanks", 3, roots_and_peers_are_global_ranks, ""},
      {"BadInputsNameTheProblemWithoutTalkingToPeers", 2,
       bad_inputs_name_the_problem_without_talking_to_peers, ""},
  };
  return cases;
}

std::vector<CollectiveCase> conformance_cases_for(const std::string& backend, int world) {
  std::vector<CollectiveCase> taken;
  for (const auto& conformance_case : collective_conformance_cases()) {
    if (world >= conformance_case.min_world &&
        (backend != "nccl" || conformance_case.not_on_nccl.empty())) {
      taken.push_back(conformance_case);
    }
  }
  return taken;
}

}  // namespace dtrain::testing

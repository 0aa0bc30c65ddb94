// Conformance of the Gloo backend: every op, world sizes 2, 3 and 4,
// sub-groups, point-to-point in and out of order, zero-element and
// non-contiguous tensors, async work. Each rank is a real process. Every
// reduce op and dtype: test_gloo_reductions.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <thread>

#include "dtrain/dist/init.h"
#include "dtrain/dist/same_settings.h"
#include "expect_error.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dist::ReduceOp;

using dtrain::testing::expect_error;
using dtrain::testing::run_gloo_ranks;

class GlooWorld : public ::testing::TestWithParam<int> {};

TEST_P(GlooWorld, RootedCollectivesFromEveryRoot) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    const auto f = at::TensorOptions().dtype(at::kFloat);
    for (int root = 0; root < world; ++root) {
      // broadcast
      at::Tensor b = at::arange(5, f) + 10 * rank;
      dist::broadcast(b, root);
      EXPECT_TRUE(at::equal(b, at::arange(5, f) + 10 * root)) << "broadcast from " << root;
      // reduce: the root gets the sum, the others keep their tensor
      at::Tensor r = at::full({3}, rank + 1, f);
      dist::reduce(r, root, ReduceOp::kSum);
      EXPECT_TRUE(at::equal(r, at::full({3}, rank == root ? world * (world + 1) / 2 : rank + 1, f)))
          << "reduce to " << root << ": " << r;
      // gather
      std::vector<at::Tensor> gathered;
      if (rank == root) {
        for (int i = 0; i < world; ++i) {
          gathered.push_back(at::empty({2}, f));
        }
      }
      dist::gather(at::full({2}, rank * 3, f), gathered, root);
      for (int i = 0; rank == root && i < world; ++i) {
        EXPECT_TRUE(at::equal(gathered[i], at::full({2}, i * 3, f))) << "gather to " << root;
      }
      // scatter
      std::vector<at::Tensor> pieces;
      if (rank == root) {
        for (int i = 0; i < world; ++i) {
          pieces.push_back(at::full({2, 2}, i * 2 + 1, f));
        }
      }
      at::Tensor piece = at::empty({2, 2}, f);
      dist::scatter(piece, pieces, root);
      EXPECT_TRUE(at::equal(piece, at::full({2, 2}, rank * 2 + 1, f))) << "scatter from " << root;
    }
  });
}

TEST_P(GlooWorld, GatherScatterAllToAll) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    const auto f = at::TensorOptions().dtype(at::kDouble);
    std::vector<at::Tensor> all(world);
    for (auto& t : all) {
      t = at::empty({3}, f);
    }
    dist::all_gather(all, at::full({3}, rank + 0.5, f));
    for (int i = 0; i < world; ++i) {
      EXPECT_TRUE(at::equal(all[i], at::full({3}, i + 0.5, f))) << "all_gather block " << i;
    }
    std::vector<at::Tensor> inputs;
    for (int i = 0; i < world; ++i) {
      inputs.push_back(at::full({2}, (rank + 1) * (i + 1), f));
    }
    at::Tensor mine = at::empty({2}, f);
    dist::reduce_scatter(mine, inputs, ReduceOp::kSum);
    EXPECT_TRUE(at::equal(mine, at::full({2}, (rank + 1) * world * (world + 1) / 2.0, f))) << mine;
    dist::reduce_scatter(mine, inputs, ReduceOp::kAvg);
    EXPECT_TRUE(at::allclose(mine, at::full({2}, (rank + 1) * (world + 1) / 2.0, f))) << mine;

    std::vector<at::Tensor> sends;
    std::vector<at::Tensor> receives;
    for (int i = 0; i < world; ++i) {
      sends.push_back(at::full({4}, rank * 100 + i, f));
      receives.push_back(at::empty({4}, f));
    }
    dist::all_to_all(receives, sends);
    for (int i = 0; i < world; ++i) {
      EXPECT_TRUE(at::equal(receives[i], at::full({4}, i * 100 + rank, f)))
          << "all_to_all from " << i;
    }
    dist::barrier();
  });
}

// Strings of different lengths, an empty one and bytes a C string would
// end at: each rank's comes back whole, in rank order, on every rank.
TEST_P(GlooWorld, AllGatherStringsOfAnyLength) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    auto value_of = [](int r) {
      return r == 0 ? std::string()
                    : std::string(static_cast<size_t>(5 * r), 'a' + r) + std::string(1, '\0') +
                          "rank " + std::to_string(r);
    };
    const std::vector<std::string> all = dist::all_gather_strings(value_of(rank));
    ASSERT_EQ(all.size(), static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(all[r], value_of(r)) << "rank " << r << "'s string";
    }
    // All empty: nothing to pad.
    EXPECT_EQ(dist::all_gather_strings(""), std::vector<std::string>(world));
  });
}

// Settings that agree pass; one rank's other value stops every rank with
// the same message, naming the setting, the values, their ranks and the
// advice.
TEST_P(GlooWorld, CheckSameSettingsStopsEveryRankNamingTheDifference) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    dist::check_same_settings({{"--epochs", "5"}, {"--lr", "0.001"}});
    // Text only: refused on every rank before any rank is contacted.
    expect_error(
        [] {
          dist::check_same_settings({{"--tag", std::string("a\0b", 3)}});
        },
        "check_same_settings: setting '--tag' holds a NUL byte in its value");
    const std::string last = std::to_string(world - 1);
    expect_error(
        [&] {
          dist::check_same_settings(
              {{"--epochs", rank == world - 1 ? "3" : "5"}, {"--lr", "0.001"}},
              "give them the same flags");
        },
        "the processes of this job were started with different settings: --epochs: \"5\" on " +
            std::string(world == 2 ? "rank 0" : "ranks 0-" + std::to_string(world - 2)) +
            ", \"3\" on rank " + last + ". give them the same flags");
  });
}

TEST_P(GlooWorld, PointToPointRingAndOutOfOrder) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    const int next = (rank + 1) % world;
    const int prev = (rank + world - 1) % world;
    // Blocking ring: everyone posts its receive asynchronously, then sends.
    at::Tensor in = at::empty({6}, at::kLong);
    auto receiving = dist::irecv(in, prev);
    dist::send(at::full({6}, rank, at::kLong), next);
    receiving->wait();
    EXPECT_TRUE(at::equal(in, at::full({6}, prev, at::kLong)));
    // Out of order: two tagged messages, sent in one order, waited in the other.
    if (rank == 0) {
      auto late = dist::isend(at::full({2}, 2.0), 1, nullptr, /*tag=*/2);
      auto early = dist::isend(at::full({2}, 1.0), 1, nullptr, /*tag=*/1);
      early->wait();
      late->wait();
    } else if (rank == 1) {
      at::Tensor one = at::empty({2});
      at::Tensor two = at::empty({2});
      auto w2 = dist::irecv(two, 0, nullptr, 2);
      auto w1 = dist::irecv(one, 0, nullptr, 1);
      w1->wait();
      w2->wait();
      EXPECT_TRUE(w1->is_completed() && w2->is_completed());
      EXPECT_TRUE(at::equal(one, at::full({2}, 1.0)));
      EXPECT_TRUE(at::equal(two, at::full({2}, 2.0)));
    }
    dist::barrier();
  });
}

TEST_P(GlooWorld, EmptyNonContiguousAndAsync) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
    at::Tensor empty = at::empty({0});
    dist::all_reduce(empty);
    dist::broadcast(empty, 0);
    EXPECT_EQ(empty.numel(), 0);
    // A transposed view: reduced in place through a contiguous copy.
    at::Tensor base = at::arange(6, at::kFloat).view({2, 3}) * (rank + 1);
    at::Tensor view = base.t();
    dist::all_reduce(view);
    EXPECT_TRUE(
        at::equal(base, at::arange(6, at::kFloat).view({2, 3}) * (world * (world + 1) / 2)));
    // Several async collectives in flight. They run one at a time in issue
    // order, so once the last is waited on, every earlier one has finished
    // too, no later than the next, without a wait of its own.
    std::vector<at::Tensor> tensors;
    std::vector<dist::WorkPtr> works;
    for (int i = 0; i < 5; ++i) {
      tensors.push_back(at::full({100000}, i + rank, at::kFloat));
      works.push_back(dist::all_reduce(tensors.back(), ReduceOp::kMax, nullptr, /*async_op=*/true));
    }
    works.back()->wait();
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(works[i]->is_completed()) << "async all_reduce " << i;
      EXPECT_EQ(works[i]->exception(), nullptr);
      EXPECT_TRUE(at::equal(tensors[i], at::full({100000}, i + world - 1, at::kFloat)))
          << "async all_reduce " << i;
      if (i > 0) {
        EXPECT_LE(*works[i - 1]->finish_time(), *works[i]->finish_time()) << "async " << i;
      }
    }
  });
}

TEST_P(GlooWorld, SubGroups) {
  run_gloo_ranks(GetParam(), 30s, [](int rank, int world) {
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
      at::Tensor t = at::ones({1});
      dist::all_reduce(t, ReduceOp::kSum, pair);
      EXPECT_EQ(t.item<float>(), 2.0f);
      EXPECT_EQ(pair->rank(), rank);
      EXPECT_EQ(pair->size(), 2);
    }
    if (rest) {
      at::Tensor t = at::full({1}, rank);
      dist::all_reduce(t, ReduceOp::kSum, rest);
      EXPECT_EQ(t.item<float>(), (world - 1) * world / 2.0f);
      EXPECT_EQ(rest->rank(), rank - 1);
      at::Tensor from_first = at::full({1}, rank);
      dist::broadcast(from_first, 1, rest);  // global rank 1, the group's rank 0
      EXPECT_EQ(from_first.item<float>(), 1.0f);
    }
    dist::barrier();
  });
}

// torch.distributed's convention: the free functions take the default
// group's ranks, also with a smaller group. Group {0, 2, 3} of 4 ranks, so
// its group ranks 1 and 2 are global ranks 2 and 3.
TEST(GlooSubGroup, RootsAndPeersAreGlobalRanks) {
  run_gloo_ranks(4, 30s, [](int rank, int) {
    const std::vector<int> members = {0, 2, 3};
    auto group = dist::new_group({3, 0, 2});  // in any order, as torch allows
    ASSERT_EQ(group != nullptr, rank != 1);
    if (!group) {
      dist::barrier();
      return;
    }
    EXPECT_EQ(dist::get_process_group_ranks(group), members);
    EXPECT_EQ(dist::get_group_rank(group, 3), 2);
    EXPECT_EQ(dist::get_global_rank(group, 1), 2);
    EXPECT_EQ(dist::get_global_rank(nullptr, 1), 1);
    expect_error([&] { dist::get_group_rank(group, 1); },
                 "rank 1 is not a member of group 'group1' (global ranks 0, 2, 3)");
    expect_error([&] { dist::get_global_rank(group, 3); }, "rank 3 is outside group 'group1'");
    const auto f = at::TensorOptions().dtype(at::kFloat);
    const int size = static_cast<int>(members.size());
    for (int root : members) {
      at::Tensor b = at::full({2}, rank, f);
      dist::broadcast(b, root, group);
      EXPECT_TRUE(at::equal(b, at::full({2}, root, f))) << "broadcast from " << root;
      at::Tensor r = at::full({1}, rank, f);
      dist::reduce(r, root, ReduceOp::kSum, group);
      EXPECT_EQ(r.item<float>(), rank == root ? 0 + 2 + 3 : rank) << "reduce to " << root;
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
    // Point to point between global ranks 3 and 0, through the group.
    if (rank == 3) {
      dist::send(at::full({3}, 7.0), 0, group);
    } else if (rank == 0) {
      at::Tensor in = at::zeros({3});
      dist::recv(in, 3, group);
      EXPECT_TRUE(at::equal(in, at::full({3}, 7.0)));
    }
    // A rank outside the group is refused before anything is sent; the
    // group's own methods still take group ranks.
    at::Tensor t = at::full({1}, rank, f);
    expect_error([&] { dist::broadcast(t, 1, group); },
                 "broadcast: src 1 is not a member of group 'group1' (global ranks 0, 2, 3)");
    expect_error([&] { dist::reduce(t, 1, ReduceOp::kSum, group); },
                 "reduce: dst 1 is not a member");
    expect_error([&] { dist::send(t, 1, group); }, "send: dst 1 is not a member");
    group->broadcast(t, {.root = 1})->wait();
    EXPECT_EQ(t.item<float>(), 2.0f);
    dist::barrier();
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooWorld, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

TEST(GlooInputs, BadInputsNameTheProblemWithoutTalkingToPeers) {
  run_gloo_ranks(2, 30s, [](int rank, int) {
    at::Tensor ints = at::ones({2}, at::kInt);
    expect_error([&] { dist::all_reduce(ints, ReduceOp::kAvg); },
                 "AVG needs a floating-point tensor");
    at::Tensor f = at::ones({2});
    expect_error([&] { dist::broadcast(f, 5); }, "root 5 is outside the group of size 2");
    expect_error([&] { dist::send(f, rank); }, "must be another rank");
    at::Tensor bools = at::ones({2}, at::kBool);
    expect_error([&] { dist::all_reduce(bools); }, "gloo supports float32");
    std::vector<at::Tensor> one = {at::empty({2})};
    expect_error([&] { dist::all_gather(one, f); }, "outputs must hold 2 tensors");
    // The group still works after rejected calls.
    dist::all_reduce(f);
    EXPECT_TRUE(at::equal(f, at::full({2}, 2.0)));
  });
}

}  // namespace

// Conformance of the mpi backend: every op, reduce op and dtype, sub-groups,
// point-to-point in and out of order, zero-element and non-contiguous
// tensors, bad inputs and timeouts -- the checks of test_gloo_collectives.cpp.
// Not a gtest: one program run by test_mpi_run.sh under mpirun with 2, 3 or
// 4 ranks. Every rank prints each mismatch; the program exits non-zero on
// any, and mpirun then fails too.
#include <ATen/ATen.h>

#include <functional>
#include <iostream>
#include <thread>

#include "dtrain/dist/init.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dist::ReduceOp;

int g_rank = -1;
int g_failures = 0;

// A tensor on one line, so the ranks' messages do not interleave: "Float[3, 3]".
struct Flat {
  const at::Tensor& tensor;
};
std::ostream& operator<<(std::ostream& out, const Flat& flat) {
  const at::Tensor values = flat.tensor.to(at::kDouble).reshape({-1});
  out << flat.tensor.scalar_type() << "[";
  for (int64_t i = 0; i < values.numel(); ++i) {
    out << (i ? ", " : "") << values[i].item<double>();
  }
  return out << "]";
}

#define EXPECT_THAT(cond, ...)                                                              \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      ++g_failures;                                                                         \
      std::cerr << "rank " << g_rank << ": " << __FILE__ << ":" << __LINE__ << ": " #cond   \
                << " is false: " << ::dtrain::detail::concat("", __VA_ARGS__) << std::endl; \
    }                                                                                       \
  } while (false)

// Runs `call`, which must raise E with `fragment` in its message.
template <typename E = dtrain::Error>
void expect_error(const std::function<void()>& call, const std::string& fragment) {
  try {
    call();
    EXPECT_THAT(false, "accepted; expected an error containing: ", fragment);
  } catch (const E& e) {
    EXPECT_THAT(std::string(e.what()).find(fragment) != std::string::npos, "error '", e.what(),
                "' lacks '", fragment, "'");
  } catch (const std::exception& e) {
    EXPECT_THAT(false, "wrong exception type for '", fragment, "': ", e.what());
  }
}

const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                             at::kInt,   at::kLong,   at::kByte};

bool same(const at::Tensor& got, const at::Tensor& expected) {
  return got.sizes() == expected.sizes() &&
         at::allclose(got.to(at::kDouble), expected.to(at::kDouble));
}

void all_reduce_every_op_and_dtype(int rank, int world) {
  double factorial = 1;
  for (int r = 1; r <= world; ++r) {
    factorial *= r;
  }
  for (auto dtype : kDtypes) {
    const bool floating = at::isFloatingType(dtype);
    std::vector<std::pair<ReduceOp, double>> cases = {{ReduceOp::kSum, world * (world + 1) / 2.0},
                                                      {ReduceOp::kMin, 1.0},
                                                      {ReduceOp::kMax, static_cast<double>(world)},
                                                      {ReduceOp::kProduct, factorial}};
    if (floating) {
      cases.push_back({ReduceOp::kAvg, (world + 1) / 2.0});
    }
    for (const auto& [op, expected] : cases) {
      at::Tensor t = at::full({7}, rank + 1, at::TensorOptions().dtype(dtype));
      dist::all_reduce(t, op);
      EXPECT_THAT(same(t, at::full({7}, expected, at::kDouble)), "all_reduce dtype ", dtype, " op ",
                  dist::to_string(op), ": got ", Flat{t});
      // reduce with the same op, to the last rank; the others keep theirs.
      at::Tensor r = at::full({5}, rank + 1, at::TensorOptions().dtype(dtype));
      dist::reduce(r, world - 1, op);
      EXPECT_THAT(same(r, at::full({5}, rank == world - 1 ? expected : rank + 1, at::kDouble)),
                  "reduce dtype ", dtype, " op ", dist::to_string(op), ": got ", Flat{r});
    }
  }
}

void rooted_collectives_from_every_root(int rank, int world) {
  const auto f = at::TensorOptions().dtype(at::kFloat);
  for (int root = 0; root < world; ++root) {
    at::Tensor b = at::arange(5, f) + 10 * rank;
    dist::broadcast(b, root);
    EXPECT_THAT(at::equal(b, at::arange(5, f) + 10 * root), "broadcast from ", root, ": ", Flat{b});
    at::Tensor r = at::full({3}, rank + 1, f);
    dist::reduce(r, root, ReduceOp::kSum);
    EXPECT_THAT(at::equal(r, at::full({3}, rank == root ? world * (world + 1) / 2 : rank + 1, f)),
                "reduce to ", root, ": ", Flat{r});
    std::vector<at::Tensor> gathered;
    if (rank == root) {
      for (int i = 0; i < world; ++i) {
        gathered.push_back(at::empty({2}, f));
      }
    }
    dist::gather(at::full({2}, rank * 3, f), gathered, root);
    for (int i = 0; rank == root && i < world; ++i) {
      EXPECT_THAT(at::equal(gathered[i], at::full({2}, i * 3, f)), "gather to ", root, " block ", i,
                  ": ", Flat{gathered[i]});
    }
    std::vector<at::Tensor> pieces;
    if (rank == root) {
      for (int i = 0; i < world; ++i) {
        pieces.push_back(at::full({2, 2}, i * 2 + 1, f));
      }
    }
    at::Tensor piece = at::empty({2, 2}, f);
    dist::scatter(piece, pieces, root);
    EXPECT_THAT(at::equal(piece, at::full({2, 2}, rank * 2 + 1, f)), "scatter from ", root, ": ",
                Flat{piece});
  }
  // Broadcast, gather and scatter move every dtype (float16/bfloat16 as dtrain's own type).
  for (auto dtype : kDtypes) {
    const auto o = at::TensorOptions().dtype(dtype);
    at::Tensor b = at::full({4}, rank + 2, o);
    dist::broadcast(b, world - 1);
    EXPECT_THAT(same(b, at::full({4}, world + 1, at::kDouble)), "broadcast dtype ", dtype, ": ",
                Flat{b});
    std::vector<at::Tensor> gathered(world);
    for (auto& g : gathered) {
      g = at::empty({3}, o);
    }
    dist::gather(at::full({3}, rank, o), gathered, 0);
    for (int i = 0; rank == 0 && i < world; ++i) {
      EXPECT_THAT(same(gathered[i], at::full({3}, i, at::kDouble)), "gather dtype ", dtype,
                  " block ", i, ": ", Flat{gathered[i]});
    }
    std::vector<at::Tensor> pieces;
    for (int i = 0; i < world; ++i) {
      pieces.push_back(at::full({3}, i + 1, o));
    }
    at::Tensor piece = at::empty({3}, o);
    dist::scatter(piece, pieces, 0);
    EXPECT_THAT(same(piece, at::full({3}, rank + 1, at::kDouble)), "scatter dtype ", dtype, ": ",
                Flat{piece});
  }
}

void gather_scatter_all_to_all(int rank, int world) {
  for (auto dtype : kDtypes) {
    const auto o = at::TensorOptions().dtype(dtype);
    std::vector<at::Tensor> all(world);
    for (auto& t : all) {
      t = at::empty({3}, o);
    }
    dist::all_gather(all, at::full({3}, rank + 1, o));
    for (int i = 0; i < world; ++i) {
      EXPECT_THAT(same(all[i], at::full({3}, i + 1, at::kDouble)), "all_gather dtype ", dtype,
                  " block ", i, ": ", Flat{all[i]});
    }
    std::vector<at::Tensor> sends;
    std::vector<at::Tensor> receives;
    for (int i = 0; i < world; ++i) {
      sends.push_back(at::full({4}, rank * 10 + i, o));
      receives.push_back(at::empty({4}, o));
    }
    dist::all_to_all(receives, sends);
    for (int i = 0; i < world; ++i) {
      EXPECT_THAT(same(receives[i], at::full({4}, i * 10 + rank, at::kDouble)), "all_to_all dtype ",
                  dtype, " from ", i, ": ", Flat{receives[i]});
    }
    // reduce_scatter: block i of rank r holds (r + 1) * (i + 1).
    std::vector<at::Tensor> inputs;
    for (int i = 0; i < world; ++i) {
      inputs.push_back(at::full({2}, (rank + 1) * (i + 1), o));
    }
    std::vector<std::pair<ReduceOp, double>> cases = {
        {ReduceOp::kSum, (rank + 1) * world * (world + 1) / 2.0},
        {ReduceOp::kMin, rank + 1.0},
        {ReduceOp::kMax, (rank + 1.0) * world}};
    if (at::isFloatingType(dtype)) {
      cases.push_back({ReduceOp::kAvg, (rank + 1) * (world + 1) / 2.0});
    }
    for (const auto& [op, expected] : cases) {
      at::Tensor mine = at::empty({2}, o);
      dist::reduce_scatter(mine, inputs, op);
      EXPECT_THAT(same(mine, at::full({2}, expected, at::kDouble)), "reduce_scatter dtype ", dtype,
                  " op ", dist::to_string(op), ": ", Flat{mine});
    }
  }
  dist::barrier();
}

void point_to_point_ring_and_out_of_order(int rank, int world) {
  const int next = (rank + 1) % world;
  const int prev = (rank + world - 1) % world;
  at::Tensor in = at::empty({6}, at::kLong);
  auto receiving = dist::irecv(in, prev);
  dist::send(at::full({6}, rank, at::kLong), next);
  receiving->wait();
  EXPECT_THAT(at::equal(in, at::full({6}, prev, at::kLong)), "ring from ", prev, ": ", Flat{in});
  // Two tagged messages, sent in one order, waited in the other.
  if (rank == 0) {
    at::Tensor late_data = at::full({2}, 2.0);
    at::Tensor early_data = at::full({2}, 1.0);
    auto late = dist::isend(late_data, 1, nullptr, /*tag=*/2);
    auto early = dist::isend(early_data, 1, nullptr, /*tag=*/1);
    early->wait();
    late->wait();
  } else if (rank == 1) {
    at::Tensor one = at::empty({2});
    at::Tensor two = at::empty({2});
    auto w2 = dist::irecv(two, 0, nullptr, 2);
    auto w1 = dist::irecv(one, 0, nullptr, 1);
    w1->wait();
    w2->wait();
    EXPECT_THAT(w1->is_completed() && w2->is_completed(), "waited works not completed");
    EXPECT_THAT(at::equal(one, at::full({2}, 1.0)), "tag 1: ", Flat{one});
    EXPECT_THAT(at::equal(two, at::full({2}, 2.0)), "tag 2: ", Flat{two});
  }
  // A receive whose sender's tensor is smaller says so.
  if (rank == 0) {
    dist::send(at::ones({3}), 1, nullptr, 7);
  } else if (rank == 1) {
    at::Tensor bigger = at::empty({4});
    expect_error<dist::CollectiveError>([&] { dist::recv(bigger, 0, nullptr, 7); },
                                        "received 12 bytes, expected 16");
  }
  dist::barrier();
}

void empty_non_contiguous_and_async(int rank, int world) {
  at::Tensor empty = at::empty({0});
  dist::all_reduce(empty);
  dist::broadcast(empty, 0);
  EXPECT_THAT(empty.numel() == 0, "the empty tensor grew: ", empty.sizes());
  std::vector<at::Tensor> empties;
  for (int i = 0; i < world; ++i) {
    empties.push_back(at::empty({0}));
  }
  dist::all_gather(empties, at::empty({0}));
  if (rank == 0) {
    dist::send(empty, 1);
  } else if (rank == 1) {
    dist::recv(empty, 0);
  }
  at::Tensor base = at::arange(6, at::kFloat).view({2, 3}) * (rank + 1);
  at::Tensor view = base.t();
  dist::all_reduce(view);
  EXPECT_THAT(at::equal(base, at::arange(6, at::kFloat).view({2, 3}) * (world * (world + 1) / 2)),
              "non-contiguous all_reduce: ", Flat{base});
  std::vector<at::Tensor> tensors;
  std::vector<dist::WorkPtr> works;
  for (int i = 0; i < 5; ++i) {
    tensors.push_back(at::full({1000}, i + rank, at::kFloat));
    works.push_back(dist::all_reduce(tensors.back(), ReduceOp::kMax, nullptr, /*async_op=*/true));
  }
  for (int i = 4; i >= 0; --i) {
    works[i]->wait();
    EXPECT_THAT(works[i]->is_completed() && works[i]->exception() == nullptr, "async work ", i);
    EXPECT_THAT(at::equal(tensors[i], at::full({1000}, i + world - 1, at::kFloat)), "async ", i);
  }
}

void sub_groups(int rank, int world) {
  auto pair = dist::new_group({0, 1});
  std::vector<int> tail;
  for (int r = 1; r < world; ++r) {
    tail.push_back(r);
  }
  auto rest = dist::new_group(tail);
  EXPECT_THAT((pair != nullptr) == (rank <= 1), "pair membership");
  EXPECT_THAT((rest != nullptr) == (rank >= 1), "rest membership");
  if (pair) {
    at::Tensor t = at::ones({1});
    dist::all_reduce(t, ReduceOp::kSum, pair);
    EXPECT_THAT(t.item<float>() == 2.0f, "pair all_reduce: ", Flat{t});
    EXPECT_THAT(pair->rank() == rank && pair->size() == 2, "pair rank ", pair->rank(), " size ",
                pair->size());
    EXPECT_THAT(pair->backend_name() == "mpi", "backend ", pair->backend_name());
  }
  if (rest) {
    at::Tensor t = at::full({1}, rank);
    dist::all_reduce(t, ReduceOp::kSum, rest);
    EXPECT_THAT(t.item<float>() == (world - 1) * world / 2.0f, "rest all_reduce: ", Flat{t});
    EXPECT_THAT(rest->rank() == rank - 1, "rest rank ", rest->rank());
    at::Tensor from_first = at::full({1}, rank);
    dist::broadcast(from_first, 1, rest);  // global rank 1, the group's rank 0
    EXPECT_THAT(from_first.item<float>() == 1.0f, "rest broadcast: ", Flat{from_first});
    // Point to point takes global ranks too (the group's ranks 0 and 1).
    if (rest->size() >= 2 && rest->rank() < 2) {
      at::Tensor x = at::full({2}, rank, at::kInt);
      if (rest->rank() == 0) {
        dist::send(x, 2, rest, 5);
      } else {
        dist::recv(x, 1, rest, 5);
        EXPECT_THAT(at::equal(x, at::full({2}, 1, at::kInt)), "rest recv: ", Flat{x});
      }
    }
  }
  // A group of every rank works like the default one.
  auto everyone = dist::new_group([&] {
    std::vector<int> all(world);
    for (int r = 0; r < world; ++r) {
      all[r] = r;
    }
    return all;
  }());
  at::Tensor t = at::full({2}, rank + 1.0);
  dist::all_reduce(t, ReduceOp::kProduct, everyone);
  EXPECT_THAT(everyone->rank() == rank, "everyone rank ", everyone->rank());
  double factorial = 1;
  for (int r = 1; r <= world; ++r) {
    factorial *= r;
  }
  EXPECT_THAT(at::equal(t, at::full({2}, factorial)), "everyone product: ", Flat{t});
  dist::barrier();
}

void bad_inputs_name_the_problem(int rank, int world) {
  at::Tensor ints = at::ones({2}, at::kInt);
  expect_error([&] { dist::all_reduce(ints, ReduceOp::kAvg); },
               "AVG needs a floating-point tensor");
  at::Tensor f = at::ones({2});
  expect_error([&] { dist::broadcast(f, world + 3); }, "root " + std::to_string(world + 3) +
                                                           " is outside the group of size " +
                                                           std::to_string(world));
  expect_error([&] { dist::send(f, rank); }, "must be another rank");
  expect_error([&] { dist::send(f, (rank + 1) % world, nullptr, -1); }, "tag must be in 0..");
  at::Tensor bools = at::ones({2}, at::kBool);
  expect_error([&] { dist::all_reduce(bools); }, "backend mpi supports float32");
  std::vector<at::Tensor> one = {at::empty({2})};
  expect_error([&] { dist::all_gather(one, f); },
               "outputs must hold " + std::to_string(world) + " tensors");
  // The group still works after rejected calls.
  dist::all_reduce(f);
  EXPECT_THAT(at::equal(f, at::full({2}, static_cast<float>(world))), "after errors: ", f);
}

void timeouts_name_op_group_and_rank(int rank, int world) {
  std::vector<int> all(world);
  for (int r = 0; r < world; ++r) {
    all[r] = r;
  }
  auto doomed = dist::new_group(all);
  at::Tensor t = at::ones({3});
  if (rank == 0) {
    // Only rank 0 joins (yet): the collective times out and breaks the group.
    // The others wait in the default group's barrier, so none reports a
    // timeout in this one: each is named as not reaching it (Note [Which
    // rank a timeout waited on]).
    std::string others;
    for (int r = 1; r < world; ++r) {
      others += (r > 1 ? ", " : "") + std::to_string(r);
    }
    expect_error<dist::CollectiveTimeoutError>(
        [&] { doomed->all_reduce(t, {.timeout = 300ms})->wait(); },
        "all_reduce(SUM) on group '" + doomed->name() + "' (mpi), rank 0 of " +
            std::to_string(world) +
            ": not finished after 300 ms (a rank did not join, or joined a different "
            "collective); rank(s) " +
            others + " did not reach this all_reduce(SUM) (#1 on group '" + doomed->name() +
            "'): rank(s) " + others + " reported no timeout within 300 ms");
    expect_error<dist::CollectiveError>([&] { doomed->barrier()->wait(); },
                                        "unusable since an earlier collective timed out");
    // A receive nobody sends (yet) times out too.
    at::Tensor never = at::empty({2});
    expect_error<dist::CollectiveTimeoutError>(
        [&] { dist::irecv(never, 1, nullptr, 99)->wait(200ms); },
        "recv from rank 1 on group 'default' (mpi), rank 0 of");
  }
  dist::barrier();
  // Now the others join, so rank 0's abandoned operations complete in the background.
  if (rank != 0) {
    doomed->all_reduce(t)->wait();
  }
  if (rank == 1) {
    dist::send(at::ones({2}), 0, nullptr, 99);
  }
  dist::barrier();
}

// Note [Which rank a timeout waited on] as on Gloo: every rank but the last
// reaches a collective, which times out; each names the last rank, and only
// it, and sees the others time out in it too.
void a_rank_that_skips_a_collective_is_named(int rank, int world) {
  std::vector<int> all(world);
  for (int r = 0; r < world; ++r) {
    all[r] = r;
  }
  auto group = dist::new_group(all);
  const int late = world - 1;
  at::Tensor t = at::ones({2});
  group->all_reduce(t)->wait();  // #1, by everyone
  EXPECT_THAT(t[0].item<float>() == world, "all_reduce #1: ", Flat{t});
  if (rank != late) {
    try {
      group->all_reduce(t, {.timeout = 2s})->wait();
      EXPECT_THAT(false, "all_reduce #2 finished without rank ", late);
    } catch (const dist::CollectiveTimeoutError& e) {
      const std::string message = e.what();
      const std::string label = "all_reduce(SUM) (#2 on group '" + group->name() + "')";
      EXPECT_THAT(message.find("; rank(s) " + std::to_string(late) + " did not reach this " +
                               label + ": rank(s) " + std::to_string(late) +
                               " reported no timeout within 2000 ms") != std::string::npos,
                  message);
      for (int r = 0; r < late; ++r) {
        EXPECT_THAT(message.find("rank(s) " + std::to_string(r) + " did not") == std::string::npos,
                    "a victim named: ", message);
      }
      if (world > 2) {
        EXPECT_THAT(message.find("timed out in it too") != std::string::npos, message);
      }
    }
  }
  dist::barrier();
  if (rank == late) {
    group->all_reduce(t)->wait();  // lets the others' abandoned #2 complete
  }
  dist::barrier();
}

}  // namespace

int main() {
  at::set_num_threads(1);
  const auto launch_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const auto launch_size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (launch_rank == nullptr || launch_size == nullptr) {
    std::cerr << "run me under mpirun (OMPI_COMM_WORLD_RANK/SIZE are unset)\n";
    return 2;
  }
  g_rank = std::atoi(launch_rank);
  const int world = std::atoi(launch_size);
  if (world < 2) {
    std::cerr << "run me with at least 2 ranks, got " << world << "\n";
    return 2;
  }
  // A world size that is not MPI's is refused before anyone meets in the store.
  expect_error(
      [&] { dist::init_process_group({.backend = "mpi", .world_size = world + 1, .timeout = 5s}); },
      "MPI says this process is rank " + std::to_string(g_rank) + " of " + std::to_string(world));
  EXPECT_THAT(!dist::is_initialized(), "a failed init left a group behind");

  const std::vector<std::pair<const char*, void (*)(int, int)>> cases = {
      {"all_reduce_every_op_and_dtype", all_reduce_every_op_and_dtype},
      {"rooted_collectives_from_every_root", rooted_collectives_from_every_root},
      {"gather_scatter_all_to_all", gather_scatter_all_to_all},
      {"point_to_point_ring_and_out_of_order", point_to_point_ring_and_out_of_order},
      {"empty_non_contiguous_and_async", empty_non_contiguous_and_async},
      {"sub_groups", sub_groups},
      {"bad_inputs_name_the_problem", bad_inputs_name_the_problem},
      {"timeouts_name_op_group_and_rank", timeouts_name_op_group_and_rank},
      {"a_rank_that_skips_a_collective_is_named", a_rank_that_skips_a_collective_is_named},
  };
  // One default group for every case; a collective that hangs fails after
  // 20 s instead of running into ctest's timeout.
  dist::init_process_group({.backend = "mpi", .timeout = 20s});
  EXPECT_THAT(dist::get_rank() == g_rank && dist::get_world_size() == world, "rank ",
              dist::get_rank(), " of ", dist::get_world_size());
  for (const auto& [name, body] : cases) {
    const int before = g_failures;
    try {
      body(g_rank, world);
      dist::barrier();
    } catch (const std::exception& e) {
      EXPECT_THAT(false, name, " raised: ", e.what());
      std::cerr << "rank " << g_rank << ": giving up after an exception in " << name << std::endl;
      return 1;  // peers may now wait on this rank; mpirun ends them
    }
    if (g_rank == 0 || g_failures != before) {
      std::cout << "rank " << g_rank << ": " << name << ": "
                << (g_failures == before ? "ok" : "FAILED") << std::endl;
    }
  }
  dist::destroy_process_group();
  if (g_failures > 0) {
    std::cerr << "rank " << g_rank << ": " << g_failures << " check(s) failed" << std::endl;
    return 1;
  }
  return 0;
}

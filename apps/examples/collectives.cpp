// Each collective the seed lists, on the default group, printing what every
// rank has afterwards as "<collective>: Rank R has data X". With the
// default two ranks:
//
//   broadcast: Rank 1 has data 1            rank 0's 1 copied to everyone
//   reduce: Rank 0 has data 2               SUM of ones lands on rank 0 ...
//   reduce: Rank 1 has data 1               ... the others keep their tensor
//   all_reduce: Rank 1 has data 2           SUM of ones on every rank
//   all_gather: Rank 1 has data [1, 2]      every rank's rank+1, on every rank
//   gather: Rank 0 has data [1, 2]          ... on rank 0 only
//   gather: Rank 1 has data []
//   scatter: Rank 1 has data 2              rank 0's list [1, 2], piece r to rank r
//   reduce_scatter: Rank 0 has data 4       inputs [1, 2] and [3, 4]: 1+3 and 2+4
//   reduce_scatter: Rank 1 has data 6
//   all_to_all: Rank 0 has data [0, 2]      inputs [0, 1] and [2, 3], transposed
//   all_to_all: Rank 1 has data [1, 3]
//   barrier: Rank 1 has passed the barrier
//
// The phases are separated by barriers so that each one's lines come before
// the next one's.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "common/format.h"
#include "common/spawn.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/process_setup.h"

namespace dist = dtrain::dist;
using dtrain::examples::format_tensor;
using dtrain::examples::format_tensors;
using dtrain::examples::print_line;

namespace {

void say(const char* collective, int rank, const std::string& data) {
  print_line(fmt::format("{}: Rank {} has data {}", collective, rank, data));
  dist::barrier();
}

// size tensors of one element: first, first + 1, ...
std::vector<at::Tensor> counting(int size, double first) {
  std::vector<at::Tensor> tensors;
  for (int i = 0; i < size; ++i) {
    tensors.push_back(at::full({1}, first + i));
  }
  return tensors;
}

std::vector<at::Tensor> empty_list(int size) {
  std::vector<at::Tensor> tensors;
  for (int i = 0; i < size; ++i) {
    tensors.push_back(at::empty({1}));
  }
  return tensors;
}

void run(int rank, int size) {
  // broadcast(tensor, src): copies tensor from src to all other processes.
  at::Tensor tensor = rank == 0 ? at::ones({1}) : at::zeros({1});
  dist::broadcast(tensor, /*src=*/0);
  say("broadcast", rank, format_tensor(tensor));

  // reduce(tensor, dst, op): applies op to every tensor, stores the result in dst.
  tensor = at::ones({1});
  dist::reduce(tensor, /*dst=*/0, dist::ReduceOp::kSum);
  say("reduce", rank, format_tensor(tensor));

  // all_reduce(tensor, op): the same, with the result on every process.
  tensor = at::ones({1});
  dist::all_reduce(tensor, dist::ReduceOp::kSum);
  say("all_reduce", rank, format_tensor(tensor));

  // all_gather(tensor_list, tensor): every process's tensor, on every process.
  std::vector<at::Tensor> tensor_list = empty_list(size);
  dist::all_gather(tensor_list, at::full({1}, rank + 1.0));
  say("all_gather", rank, format_tensors(tensor_list));

  // gather(tensor, gather_list, dst): every process's tensor, on dst only.
  std::vector<at::Tensor> gather_list = rank == 0 ? empty_list(size) : std::vector<at::Tensor>{};
  dist::gather(at::full({1}, rank + 1.0), gather_list, /*dst=*/0);
  say("gather", rank, format_tensors(gather_list));

  // scatter(tensor, scatter_list, src): scatter_list[i] to process i.
  const std::vector<at::Tensor> scatter_list =
      rank == 0 ? counting(size, 1) : std::vector<at::Tensor>{};
  tensor = at::zeros({1});
  dist::scatter(tensor, scatter_list, /*src=*/0);
  say("scatter", rank, format_tensor(tensor));

  // reduce_scatter(output, input_list, op): process i gets op over every input_list[i].
  tensor = at::zeros({1});
  dist::reduce_scatter(tensor, counting(size, rank * size + 1.0), dist::ReduceOp::kSum);
  say("reduce_scatter", rank, format_tensor(tensor));

  // all_to_all(output_list, input_list): input_list[i] of process j lands in
  // output_list[j] of process i.
  std::vector<at::Tensor> output_list = empty_list(size);
  dist::all_to_all(output_list, counting(size, rank * size));
  say("all_to_all", rank, format_tensors(output_list));

  // barrier(): blocks every process until each one has entered it.
  dist::barrier();
  print_line(fmt::format("barrier: Rank {} has passed the barrier", rank));
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{
      "Every collective: broadcast, reduce, all_reduce, all_gather, gather, scatter, "
      "reduce_scatter, all_to_all, barrier"};
  dtrain::dist::SpawnOptions options;
  dtrain::examples::add_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dtrain::dist::spawn_or_join(options, run);
    return 0;
  });
}

// The seed's "All-Reduce example": a group of ranks 0 and 1 sums a tensor
// of ones, so each of them has 2.
//
//   Rank 0 has data 2
//   Rank 1 has data 2
//
// With --world-size above 2, the other ranks are not in the group and say so.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "common/format.h"
#include "common/spawn.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/process_setup.h"

namespace dist = dtrain::dist;
using dtrain::examples::format_tensor;
using dtrain::examples::print_line;

void run(int rank, int size) {
  DTRAIN_CHECK(size >= 2, "the group [0, 1] needs a world of at least 2 ranks, got ", size);
  // Every rank calls new_group; ranks outside it get nullptr.
  dist::ProcessGroupPtr group = dist::new_group({0, 1});
  if (group == nullptr) {
    print_line(fmt::format("Rank {} is not in the group", rank));
    return;
  }
  at::Tensor tensor = at::ones({1});
  dist::all_reduce(tensor, dist::ReduceOp::kSum, group);
  print_line(fmt::format("Rank {} has data {}", rank, format_tensor(tensor[0])));
}

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"All-reduce (SUM) of ones in the group of ranks 0 and 1"};
  dtrain::dist::SpawnOptions options;
  dtrain::examples::add_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dtrain::dist::spawn_or_join(options, run);
    return 0;
  });
}

// The seed's "Non-blocking point-to-point communication": isend/irecv
// return at once; wait() makes sure the transfer is done before the tensor
// is read.
//
//   Rank 1 started receiving
//   Rank 0 started sending
//   Rank 0 has data 1
//   Rank 1 has data 1
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "common/format.h"
#include "common/spawn.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/process_setup.h"

namespace dist = dtrain::dist;
using dtrain::examples::format_tensor;
using dtrain::examples::print_line;

void run(int rank, int size) {
  at::Tensor tensor = at::zeros({1});
  std::vector<dist::WorkPtr> requests;
  if (rank == 0) {
    tensor += 1;
    // Send the tensor to every other process (the seed: to process 1).
    for (int dst = 1; dst < size; ++dst) {
      requests.push_back(dist::isend(tensor, dst));
    }
    print_line("Rank 0 started sending");
  } else {
    // Receive tensor from process 0
    requests.push_back(dist::irecv(tensor, 0));
    print_line(fmt::format("Rank {} started receiving", rank));
  }
  for (const auto& request : requests) {
    request->wait();
  }
  print_line(fmt::format("Rank {} has data {}", rank, format_tensor(tensor[0])));
}

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"Non-blocking point-to-point: isend()/irecv(), then wait()"};
  dtrain::dist::SpawnOptions options;
  dtrain::examples::add_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dtrain::dist::spawn_or_join(options, run);
    return 0;
  });
}

// A 2-rank all_reduce on the Gloo backend as one small program, for running
// under valgrind (ctest dist.gloo_valgrind): it forks both ranks, each sums
// a tensor over tcp:// on the given port and checks the result. Exit 0 when
// both ranks succeeded.
//
//   gloo_allreduce_smoke [port]      # default: a free port
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <ATen/ATen.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/process_setup.h"
#include "multi_process.h"

namespace {

int run_rank(int rank, int port) {
  namespace dist = dtrain::dist;
  dist::init_process_group({.backend = "gloo",
                            .init_method = "tcp://127.0.0.1:" + std::to_string(port),
                            .rank = rank,
                            .world_size = 2,
                            .timeout = std::chrono::seconds(120)});
  at::Tensor t = at::full({1024}, rank + 1.0);
  dist::all_reduce(t);
  const bool ok = at::equal(t, at::full({1024}, 3.0));
  dist::destroy_process_group();
  if (!ok) {
    std::fprintf(stderr, "rank %d: all_reduce gave %s\n", rank, t[0].toString().c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [port]\n", argv[0]);
    return 2;
  }
  const int port = argc == 2 ? std::atoi(argv[1]) : static_cast<int>(dtrain::testing::free_port());
  at::set_num_threads(1);
  pid_t pids[2] = {0, 0};
  for (int rank = 0; rank < 2; ++rank) {
    pids[rank] = ::fork();
    if (pids[rank] == 0) {
      int code = 1;
      try {
        code = run_rank(rank, port);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
      }
      std::fflush(nullptr);
      std::exit(code);  // exit(), not _exit(): valgrind's leak/error summary runs at exit
    }
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::printf("%s\n", failed == 0 ? "both ranks passed" : "a rank failed");
  return failed == 0 ? 0 : 1;
}

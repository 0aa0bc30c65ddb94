// A worker for dtrun's multi-node tests: joins the job through
// init_process_group (gloo, env:// from dtrun's variables), then all-reduces
// (rank + 1) for --steps steps, checking each sum against the world size.
//
// It appends "started rank R world W restart C pid P master ADDR" to OUT_DIR/started when it
// has joined, and rank 0 appends "world=W restart=C sum=S ok" to
// OUT_DIR/result at the end. Any wrong sum or failed collective exits 1.
//
// --hang-rank R --hang-step S: rank R stops at step S, as a hung rank does
// (it sleeps 60 s without calling the step's all-reduce), so the others'
// collective times out after --timeout-ms; with --hang-restart C, only in
// the round whose TORCHELASTIC_RESTART_COUNT is C.
//
// --short-rank R: before the steps, rank 0 broadcasts 4 doubles and rank R
// receives them into a tensor of 2, which libgloo refuses by ending rank R
// (Note [A message larger than its receive]); the other ranks wait to be
// stopped, so rank R's is the job's only failure.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <ATen/ATen.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/process_setup.h"

namespace dist = dtrain::dist;

namespace {

void append_line(const std::string& path, const std::string& line) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  DTRAIN_CHECK(file != nullptr, "cannot append to ", path);
  std::fputs((line + "\n").c_str(), file);
  std::fclose(file);
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"All-reduce rank+1 across a dtrun job, step after step"};
  int steps = 10;
  int step_ms = 100;
  std::string out_dir;
  int timeout_ms = 20'000;  // a vanished peer must not hang the test
  int hang_rank = -1;
  int hang_step = 0;
  int hang_restart = -1;  // any
  int short_rank = -1;
  app.add_option("--steps", steps)->check(dtrain::util::positive());
  app.add_option("--step-ms", step_ms)->check(dtrain::util::non_negative());
  app.add_option("--out", out_dir)->required();
  app.add_option("--timeout-ms", timeout_ms)->check(dtrain::util::positive());
  app.add_option("--hang-rank", hang_rank);
  app.add_option("--hang-step", hang_step)->check(dtrain::util::non_negative());
  app.add_option("--hang-restart", hang_restart);
  app.add_option("--short-rank", short_rank);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dist::InitOptions options;
    options.backend = "gloo";
    options.timeout = std::chrono::milliseconds(timeout_ms);
    dist::init_process_group(options);
    const int rank = dist::get_rank();
    const int world = dist::get_world_size();
    const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
    const std::string restarts = restart ? restart : "?";
    append_line(out_dir + "/started", "started rank " + std::to_string(rank) + " world " +
                                          std::to_string(world) + " restart " + restarts + " pid " +
                                          std::to_string(::getpid()) + " master " +
                                          std::getenv("MASTER_ADDR"));
    if (short_rank >= 0) {
      at::Tensor values = at::zeros({rank == short_rank ? 2 : 4}, at::kDouble);
      try {
        dist::broadcast(values, 0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());  // rank R is gone
      }
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return 3;
    }
    const double expected = world * (world + 1) / 2.0;
    double sum = 0;
    for (int step = 0; step < steps; ++step) {
      if (rank == hang_rank && step == hang_step &&
          (hang_restart < 0 || restarts == std::to_string(hang_restart))) {
        std::fprintf(stderr, "rank %d stops at step %d (--hang-rank)\n", rank, step);
        std::fflush(stderr);
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return 3;
      }
      at::Tensor t = at::full({4}, static_cast<double>(rank + 1), at::kDouble);
      dist::all_reduce(t);
      sum = t[0].item<double>();
      DTRAIN_CHECK(sum == expected, "step ", step, ": all_reduce gave ", sum, ", expected ",
                   expected);
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    }
    dist::barrier();
    if (rank == 0) {
      append_line(out_dir + "/result", "world=" + std::to_string(world) + " restart=" + restarts +
                                           " sum=" + std::to_string(static_cast<int>(sum)) + " ok");
    }
    dist::destroy_process_group();
    return 0;
  });
}

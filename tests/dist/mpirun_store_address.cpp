// Started by mpirun without MASTER_PORT: init_process_group finds the store
// through MPI (Note [The store's address through MPI] in
// sdk/src/dist/mpi_store_address.cpp). Each rank checks that the store is
// shared (every rank reads the key of every other) and that one all_reduce
// on the backend named on the command line sums over the whole job. With
// --expect-error, every rank instead expects init_process_group to raise
// dtrain::Error containing the text; with --late-last-rank, the last rank
// calls it 6 s late and every rank, with a timeout of 1 s, expects such an
// error rather than a hang. Run by test_mpi_run.sh; exits non-zero on any
// mismatch.
//
//   mpirun -np 3 mpirun_store_address gloo|mpi [--expect-error|--late-last-rank TEXT]
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "dtrain/dist/init.h"
#include "dtrain/dist/process_group_mpi.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/process_setup.h"

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  namespace dist = dtrain::dist;
  using namespace std::chrono_literals;
  const bool expect_error = argc == 4 && std::string(argv[2]) == "--expect-error";
  const bool late_rank = argc == 4 && std::string(argv[2]) == "--late-last-rank";
  if (argc != 2 && !expect_error && !late_rank) {
    std::fprintf(stderr, "usage: %s gloo|mpi [--expect-error|--late-last-rank TEXT]\n", argv[0]);
    return 2;
  }
  if (std::getenv("MASTER_PORT") != nullptr) {
    std::fprintf(stderr, "%s: run without MASTER_PORT (it tests the address shared by MPI)\n",
                 argv[0]);
    return 2;
  }
  if (late_rank) {
    // The last rank comes after the others' timeout: they must raise, naming it.
    const int mpi_rank = dist::ProcessGroupMPI::world_rank();
    const int mpi_size = dist::ProcessGroupMPI::world_size();
    if (mpi_rank == mpi_size - 1) {
      std::this_thread::sleep_for(6s);
    }
    try {
      dist::init_process_group({.backend = argv[1], .timeout = 1s});
      std::printf("rank %d: init_process_group succeeded\n", mpi_rank);
      return mpi_rank == mpi_size - 1 ? 0 : 1;
    } catch (const dtrain::Error& e) {
      const bool named = std::string(e.what()).find(argv[3]) != std::string::npos;
      std::printf("rank %d: %s error: %s\n", mpi_rank, named ? "expected" : "UNEXPECTED", e.what());
      return named ? 0 : 1;
    }
  }
  if (expect_error) {
    try {
      dist::init_process_group({.backend = argv[1], .timeout = 60s});
      std::fprintf(stderr, "init_process_group succeeded; expected an error with '%s'\n", argv[3]);
      return 1;
    } catch (const dtrain::Error& e) {
      const bool named = std::string(e.what()).find(argv[3]) != std::string::npos;
      std::printf("%s error: %s\n", named ? "expected" : "UNEXPECTED", e.what());
      return named ? 0 : 1;
    }
  }
  dist::init_process_group({.backend = argv[1], .timeout = 60s});
  const int rank = dist::get_rank();
  const int world = dist::get_world_size();
  int failures = 0;

  const auto store = dist::default_store();
  store->set("from/" + std::to_string(rank), std::to_string(rank * 7));
  for (int other = 0; other < world; ++other) {
    const std::string value = store->get_string("from/" + std::to_string(other));
    if (value != std::to_string(other * 7)) {
      std::fprintf(stderr, "rank %d: the store gave '%s' for rank %d\n", rank, value.c_str(),
                   other);
      ++failures;
    }
  }

  at::Tensor sum = at::full({16}, static_cast<double>(rank + 1));
  dist::all_reduce(sum);
  const double expected = world * (world + 1) / 2.0;
  if (!at::equal(sum, at::full({16}, expected))) {
    std::fprintf(stderr, "rank %d: all_reduce gave %f, not %f\n", rank, sum[0].item<double>(),
                 expected);
    ++failures;
  }
  dist::destroy_process_group();
  std::printf("rank %d of %d (%s): %s\n", rank, world, argv[1],
              failures == 0 ? "store and all_reduce ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

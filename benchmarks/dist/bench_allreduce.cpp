// All-reduce bandwidth, nccl-tests conventions: for each message size, each
// rank times `iters` back-to-back all_reduce(SUM, float32) calls per repeat
// after a warm-up; a repeat's time is the slowest rank's; the reported time
// is the median over repeats. algbw = bytes / time, busbw = algbw * 2(n-1)/n
// (the bytes each rank's link carries in a ring all-reduce). Before timing,
// every size is checked: each rank contributes (i % 17) + rank at element i,
// and every element must come back as the sum over ranks.
//
// Backends: gloo and mpi on CPU tensors, nccl on the GPU of LOCAL_RANK (a
// repeat ends with a host sync on the current stream, so it times the
// collectives, not their launch). With --backend mpi (under mpirun) each
// repeat also times raw MPI_Allreduce on the same buffer right after
// dtrain's, as the peer (impl "mpi" in the CSV); torch's wheel has no MPI
// backend to compare with.
//
//   bench_allreduce --csv out/allreduce.csv                 # forks 2 ranks (gloo)
//   bench_allreduce --rank 0 --world-size 2 --port 29600 &  # or one rank each
//   bench_allreduce --rank 1 --world-size 2 --port 29600
//   mpirun -np 2 ... bench_allreduce --backend mpi          # the launcher's ranks
//
// benchmarks/peers/allreduce_torch.py is the same harness on
// torch.distributed; benchmarks/run_allreduce.sh runs both, interleaved, and
// benchmarks/run_allreduce_mpi.sh runs the mpi backend under mpirun.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/dist/init.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/process_setup.h"

#if DTRAIN_BENCH_WITH_MPI
#include "mpi_peer.h"
#endif

namespace dist = dtrain::dist;

namespace {

struct BenchOptions {
  int rank = -1;  // -1: fork every rank here (or take the launcher's)
  int world_size = 2;
  int port = 29600;  // tcp:// rendezvous on 127.0.0.1
  std::string backend = "gloo";
  std::vector<std::int64_t> sizes = {4 << 10, 16 << 10, 64 << 10, 256 << 10,
                                     1 << 20, 4 << 20,  16 << 20, 64 << 20};
  int warmup = 2;                        // untimed calls per size, after the check
  int repeats = 11;                      // timed repeats per size (median reported)
  int big_repeats = 5;                   // repeats for sizes of 16 MiB and more
  std::int64_t budget_bytes = 64 << 20;  // iterations per repeat ~ budget / bytes ...
  int min_iters = 2;                     // ... but at least this many
  int max_iters = 50;                    // ... and at most this many
  int threads = 1;                       // at::set_num_threads in each rank
  bool mpi_peer = true;                  // with --backend mpi: time raw MPI_Allreduce too
  std::string csv;                       // written by rank 0 when not empty
};

struct Row {
  std::string impl;
  std::int64_t bytes = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

int iterations_for(const BenchOptions& o, std::int64_t bytes) {
  return static_cast<int>(
      std::clamp<std::int64_t>(o.budget_bytes / bytes, o.min_iters, o.max_iters));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Where the buffers live: CPU, or for nccl the GPU of this rank's LOCAL_RANK.
at::TensorOptions buffer_options(const BenchOptions& o) {
  if (o.backend != "nccl") {
    return at::TensorOptions(at::kFloat);
  }
  DTRAIN_CHECK(at::hasCUDA(), "--backend nccl needs a CUDA device; none is visible");
  const int local = dtrain::util::read_launch_env().local_rank.value_or(dist::get_rank());
  return at::TensorOptions(at::kFloat)
      .device(at::kCUDA, static_cast<int>(local % at::getNumGPUs()));
}

// Waits until the collectives queued so far on `t`'s device finished: a copy
// to the host on the current stream (nccl's Work::wait only orders streams).
void sync_device(const at::Tensor& t) {
  if (t.is_cuda()) {
    (void)t.view(-1)[0].item<float>();
  }
}

// The slowest rank's value, reduced on the group's own device.
double slowest(double value, const at::TensorOptions& options) {
  at::Tensor t = at::full({1}, value, options.dtype(at::kDouble));
  dist::all_reduce(t, dist::ReduceOp::kMax);
  return t.item<double>();
}

// Element i of rank r holds (i % 17) + r; the sum over ranks is known.
void check_result(std::int64_t count, int rank, int world, const at::TensorOptions& options) {
  const auto pattern = at::arange(count, at::kLong).remainder(17).to(at::kFloat);
  at::Tensor t = (pattern + rank).to(options.device());
  dist::all_reduce(t);
  const at::Tensor got = t.cpu();
  const at::Tensor expected = pattern * world + world * (world - 1) / 2.0;
  DTRAIN_CHECK(at::equal(got, expected), "all_reduce of ", count * 4,
               " bytes gave a wrong result on rank ", rank, ": max error ",
               (got - expected).abs().max().item<double>());
}

Row make_row(std::string impl, std::int64_t bytes, int world, std::vector<double> per_call_us) {
  Row row;
  row.impl = std::move(impl);
  row.bytes = bytes;
  row.time_us = median(std::move(per_call_us));
  row.algbw_gbps = static_cast<double>(bytes) / (row.time_us * 1e-6) / 1e9;
  row.busbw_gbps = row.algbw_gbps * 2.0 * (world - 1) / world;
  return row;
}

// dtrain's row, then (mpi backend) the raw-MPI peer's, timed in alternating
// repeats so that both see the same machine load.
std::vector<Row> time_size(const BenchOptions& o, std::int64_t bytes, int rank, int world) {
  const at::TensorOptions options = buffer_options(o);
  const std::int64_t count = bytes / 4;
  check_result(count, rank, world, options);
  at::Tensor buffer = at::ones({count}, options);
  for (int i = 0; i < o.warmup; ++i) {
    dist::all_reduce(buffer);
  }
  sync_device(buffer);
  const int iters = iterations_for(o, bytes);
  const int repeats = bytes >= (16 << 20) ? o.big_repeats : o.repeats;
  [[maybe_unused]] const bool with_peer = o.backend == "mpi" && o.mpi_peer;
  std::vector<double> ours_us;
  std::vector<double> peer_us;
  for (int r = 0; r < repeats; ++r) {
    buffer.fill_(1);  // values stay finite: at most world^iters
    sync_device(buffer);
    dist::barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      dist::all_reduce(buffer);
    }
    sync_device(buffer);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        iters;
    // The slowest rank's time is the collective's time.
    ours_us.push_back(slowest(us, options));
#if DTRAIN_BENCH_WITH_MPI
    if (with_peer) {
      buffer.fill_(1);
      const double seconds =
          dtrain::bench::time_raw_mpi_allreduce(buffer.mutable_data_ptr<float>(), count, iters);
      peer_us.push_back(dtrain::bench::mpi_max(seconds * 1e6 / iters));
    }
#endif
  }
  std::vector<Row> rows = {make_row("dtrain", bytes, world, std::move(ours_us))};
  if (!peer_us.empty()) {
    rows.push_back(make_row("mpi", bytes, world, std::move(peer_us)));
  }
  return rows;
}

void run_rank(const BenchOptions& o, int rank, int world) {
  at::set_num_threads(o.threads);
  dist::init_process_group(
      {.backend = o.backend,
       .init_method = rank >= 0 ? fmt::format("tcp://127.0.0.1:{}", o.port) : std::string("env://"),
       .rank = rank,
       .world_size = world});
  rank = dist::get_rank();
  world = dist::get_world_size();
  std::unique_ptr<dtrain::train::CsvWriter> csv;
  if (rank == 0) {
    if (!o.csv.empty()) {
      csv = std::make_unique<dtrain::train::CsvWriter>(
          o.csv, std::vector<std::string>{"backend", "impl", "world_size", "bytes", "time_us",
                                          "algbw_gbps", "busbw_gbps"});
    }
    std::printf("# all_reduce SUM float32, backend %s, %d ranks\n", o.backend.c_str(), world);
    std::printf("%12s %8s %12s %12s %12s  %s\n", "bytes", "iters", "time_us", "algbw_GB/s",
                "busbw_GB/s", "impl");
    std::fflush(stdout);
  }
  for (const std::int64_t bytes : o.sizes) {
    for (const Row& row : time_size(o, bytes, rank, world)) {
      if (rank != 0) {
        continue;
      }
      std::printf("%12lld %8d %12.1f %12.3f %12.3f  %s\n", static_cast<long long>(bytes),
                  iterations_for(o, bytes), row.time_us, row.algbw_gbps, row.busbw_gbps,
                  row.impl.c_str());
      std::fflush(stdout);
      if (csv) {
        csv->write_row({o.backend, row.impl, static_cast<std::int64_t>(world), row.bytes,
                        row.time_us, row.algbw_gbps, row.busbw_gbps});
      }
    }
  }
  dist::destroy_process_group();
}

// Forks every rank on this machine and waits; a failed rank stops the rest.
int spawn_ranks(const BenchOptions& o) {
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < o.world_size; ++rank) {
    const pid_t pid = ::fork();
    DTRAIN_CHECK(pid >= 0, "cannot fork rank ", rank);
    if (pid == 0) {
      int code = 0;
      try {
        run_rank(o, rank, o.world_size);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_allreduce: rank %d: error: %s\n", rank, e.what());
        code = 1;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (std::size_t done = 0; done < pids.size(); ++done) {
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid > 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      // A rank that crashed prints nothing itself: say how it ended.
      const auto rank = std::find(pids.begin(), pids.end(), pid) - pids.begin();
      if (WIFSIGNALED(status)) {
        std::fprintf(stderr, "bench_allreduce: rank %d: killed by signal %d (%s)\n",
                     static_cast<int>(rank), WTERMSIG(status), ::strsignal(WTERMSIG(status)));
      } else if (WIFEXITED(status)) {
        std::fprintf(stderr, "bench_allreduce: rank %d: exit status %d\n", static_cast<int>(rank),
                     WEXITSTATUS(status));
      }
      ++failed;
      for (pid_t other : pids) {
        ::kill(other, SIGTERM);
      }
    }
  }
  DTRAIN_CHECK(failed == 0, failed, " rank(s) failed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  BenchOptions o;
  CLI::App app{"all_reduce (SUM, float32) time, algbw and busbw per message size"};
  app.add_option("--rank", o.rank, "this process's rank; -1: fork every rank (or the launcher's)")
      ->check(CLI::Range(-1, 1023))
      ->capture_default_str();
  app.add_option("--world-size", o.world_size, "ranks")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--port", o.port, "rendezvous port on 127.0.0.1 (with --rank or when forking)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--backend", o.backend, "process-group backend")
      ->check(CLI::IsMember({"gloo", "nccl", "mpi"}))
      ->capture_default_str();
  app.add_option("--sizes", o.sizes, "message sizes in bytes (multiples of 4)")
      ->delimiter(',')
      ->check(dtrain::util::positive());
  app.add_option("--warmup", o.warmup, "untimed calls per size")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("--repeats", o.repeats, "timed repeats per size")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--big-repeats", o.big_repeats, "timed repeats for sizes >= 16 MiB")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--budget-bytes", o.budget_bytes, "calls per repeat ~ this / message size")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--min-iters", o.min_iters, "calls per repeat for large sizes")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--max-iters", o.max_iters, "calls per repeat for small sizes")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "intra-op threads per rank")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--csv", o.csv, "CSV report (written by rank 0)");
  app.add_flag("!--no-mpi-peer", o.mpi_peer, "with --backend mpi: skip timing raw MPI_Allreduce");
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    for (const std::int64_t bytes : o.sizes) {
      DTRAIN_CHECK(bytes % 4 == 0, "--sizes: ", bytes, " is not a multiple of 4 bytes");
    }
    o.max_iters = std::max(o.max_iters, o.min_iters);
#if !DTRAIN_BENCH_WITH_MPI
    DTRAIN_CHECK(o.backend != "mpi", "--backend mpi: this build of dtrain has no MPI");
#endif
    if (o.rank >= 0) {
      DTRAIN_CHECK(o.rank < o.world_size, "--rank ", o.rank, " is outside --world-size ",
                   o.world_size);
      run_rank(o, o.rank, o.world_size);
      return 0;
    }
    if (dtrain::util::read_launch_env().rank.has_value()) {
      run_rank(o, -1, -1);  // a launcher's rank, env:// rendezvous
      return 0;
    }
    return spawn_ranks(o);
  });
}

// Times every PointNet++ op of dtrain::kernels (forward, and the backward
// passes of the feature ops) and writes one CSV row per (op, device, N):
//
//   op,device,B,N,impl,median_ms
//
// Setup per N (as in PointNet++'s first set-abstraction level): B = 8 clouds
// of N points uniform in the unit cube, npoint = N / 4 centres by FPS,
// ball query radius 0.2 with nsample 32, kNN with k = 16, C = 32 feature
// channels, three-NN from all N points to the N / 4 centres. Each op runs
// once to warm up, then --repeats times; the median is reported. Outputs are
// checked (shapes, index ranges, FPS without repeats) before timing. First,
// per device, FPS at B = 32, N = 8192 -> 1024 (the CUDA goal; on CUDA also
// the one-block-per-cloud kernel for comparison). On CUDA each size also
// times the default's kernels forced and the experimental FPS kernels
// (dtrain::kernels_experimental, impl "experimental_*"), beside the default.
//
//   bench_pointnet2_ops [--sizes 1024,4096,16384] [--repeats 5] [--device cpu|cuda|all]
//                       [--out pointnet2_ops.csv] [--fps-only IMPL]
//
// --fps-only IMPL: only the goal size's row IMPL (e.g. dtrain,
// experimental_leader_512), its picks checked against the CPU's, so that a
// profiler (ncu --kernel-name ...) sees no other FPS kernel.
#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtrain/kernels/experimental/furthest_point_sample.h"
#include "dtrain/kernels/pointnet2.h"

#if __has_include(<ATen/cuda/CUDAContext.h>)
#include <c10/cuda/CUDAFunctions.h>
#define DTRAIN_BENCH_CAN_SYNC_CUDA 1
#endif

namespace {

namespace k = dtrain::kernels;
namespace x = dtrain::kernels::experimental;

struct Options {
  std::vector<int64_t> sizes{1024, 4096, 16384};
  int repeats = 5;
  std::string device = "all";
  std::string out = "pointnet2_ops.csv";
  std::string fps_only;  // one FPS row at the goal size, nothing else
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << "usage: bench_pointnet2_ops [--sizes 1024,4096,16384] [--repeats 5] "
                   "[--device cpu|cuda|all] [--out FILE.csv] [--fps-only IMPL]\n";
      std::exit(0);
    }
    if (i + 1 >= argc) {
      throw std::invalid_argument("missing value after " + flag);
    }
    const std::string value = argv[++i];
    if (flag == "--sizes") {
      options.sizes.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) {
        options.sizes.push_back(std::stoll(item));
        if (options.sizes.back() < 4) {
          throw std::invalid_argument("--sizes: every N must be >= 4, got " + item);
        }
      }
    } else if (flag == "--repeats") {
      options.repeats = std::stoi(value);
      if (options.repeats < 1) {
        throw std::invalid_argument("--repeats must be >= 1, got " + value);
      }
    } else if (flag == "--device") {
      if (value != "cpu" && value != "cuda" && value != "all") {
        throw std::invalid_argument("--device must be cpu, cuda or all, got " + value);
      }
      options.device = value;
    } else if (flag == "--out") {
      options.out = value;
    } else if (flag == "--fps-only") {
      options.fps_only = value;
    } else {
      throw std::invalid_argument("unknown flag " + flag + " (try --help)");
    }
  }
  return options;
}

void synchronize(const at::Device& device) {
#ifdef DTRAIN_BENCH_CAN_SYNC_CUDA
  if (device.is_cuda()) {
    c10::cuda::device_synchronize();
  }
#else
  (void)device;
#endif
}

double median_ms(const at::Device& device, int repeats, const std::function<void()>& fn) {
  fn();  // warm-up
  synchronize(device);
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    synchronize(device);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  const size_t mid = times.size() / 2;
  return times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
}

void check(bool ok, const std::string& what) {
  if (!ok) {
    throw std::runtime_error("benchmark output check failed: " + what);
  }
}

// One FPS row: `sample` (a kernel on clouds `xyz` (B, N, 3) -> npoint) must
// give `expected` (another kernel's picks: every kernel takes the same
// picks); then its median time, as impl `impl`. Throws when the picks differ
// or the kernel cannot take the clouds.
using Sample = std::function<at::Tensor(const at::Tensor& xyz, int64_t npoint)>;
void fps_row(const at::Device& device, int repeats, std::ostream& csv, const at::Tensor& xyz,
             int64_t npoint, const at::Tensor& expected, const std::string& impl,
             const Sample& sample) {
  if (!at::equal(sample(xyz, npoint), expected)) {
    throw std::runtime_error("its picks differ from another kernel's");
  }
  const double ms = median_ms(device, repeats, [&] { sample(xyz, npoint); });
  csv << "furthest_point_sample," << device.str() << ',' << xyz.size(0) << ',' << xyz.size(1) << ','
      << impl << ',' << ms << std::endl;  // kept should a later row never finish
  std::cout << "furthest_point_sample " << device.str() << " B=" << xyz.size(0)
            << " N=" << xyz.size(1) << " -> " << npoint << " (" << impl << "): " << ms << " ms"
            << std::endl;
}

// fps_row where a kernel this GPU refuses, or picks that differ (which the
// GPU tests report too), cost that row, named, not the rest of the benchmark.
void fps_row_if_it_runs(const at::Device& device, int repeats, std::ostream& csv,
                        const at::Tensor& xyz, int64_t npoint, const at::Tensor& expected,
                        const std::string& impl, const Sample& sample) {
  try {
    fps_row(device, repeats, csv, xyz, npoint, expected, impl, sample);
  } catch (const std::exception& e) {
    std::cout << "furthest_point_sample B=" << xyz.size(0) << " N=" << xyz.size(1) << ": no "
              << impl << " row (" << e.what() << ")" << std::endl;
  }
}

// The default's CUDA kernel `kernel`, forced.
Sample forced(k::FpsKernel kernel) {
  return [kernel](const at::Tensor& xyz, int64_t npoint) {
    return k::furthest_point_sample(xyz, npoint, 0, k::FpsOptions().cuda_kernel(kernel));
  };
}

// An experimental setting (kernels/experimental/README.md).
Sample experimental(const x::ExperimentalFps& fps) {
  return [fps](const at::Tensor& xyz, int64_t npoint) {
    return x::furthest_point_sample(xyz, npoint, fps);
  };
}

// The experimental settings that keep a cloud on chip, timed beside the
// default: the register kernel as the experimental library has it (its
// pass lane, to compare with the default's), with a tree for a thread's
// furthest point and rounds of two and four picks; the leader kernel on
// 1024 and 512 threads and in rounds of two and four on 512; and the
// measured choice among them.
struct ExperimentalVariant {
  x::ExperimentalFps fps;
  const char* impl;  // the CSV's impl column
};
std::vector<ExperimentalVariant> on_chip_variants() {
  using V = x::FpsVariant;
  const auto tree = x::ExperimentalFps(V::kRegisters).lane(x::FpsLane::kTree);
  const auto leader = x::ExperimentalFps(V::kLeader);
  return {
      {x::ExperimentalFps(V::kRegisters), "experimental_registers"},
      {tree, "experimental_registers_lane_tree"},
      {x::ExperimentalFps(tree).round(2), "experimental_registers_round2_lane_tree"},
      {x::ExperimentalFps(tree).round(4), "experimental_registers_round4_lane_tree"},
      {leader, "experimental_leader_1024"},
      {x::ExperimentalFps(leader).threads(512), "experimental_leader_512"},
      {x::ExperimentalFps(leader).threads(512).round(2), "experimental_leader_512_round2"},
      {x::ExperimentalFps(leader).threads(512).round(4), "experimental_leader_512_round4"},
      {x::ExperimentalFps(V::kMeasured), "experimental_measured"},
  };
}

// A row for each of on_chip_variants(), where it runs.
void experimental_rows(const at::Device& device, int repeats, std::ostream& csv,
                       const at::Tensor& xyz, int64_t npoint, const at::Tensor& expected) {
  for (const ExperimentalVariant& variant : on_chip_variants()) {
    fps_row_if_it_runs(device, repeats, csv, xyz, npoint, expected, variant.impl,
                       experimental(variant.fps));
  }
}

// What the experimental measured choice timed, a line a kind.
void print_measurements() {
  for (const x::FpsMeasurement& kind : x::fps_measurements()) {
    std::cout << "Experimental FPS measured for cuda:" << kind.device << " B<=" << kind.batch
              << " N<=" << kind.points << " npoint<=" << kind.npoint << ": chose "
              << kind.settings.at(kind.chosen).name << ";";
    for (const x::FpsMeasurement::Setting& setting : kind.settings) {
      std::cout << " " << setting.name << " ";
      if (setting.differs) {
        std::cout << "differs (left out)";
      } else {
        std::cout << 1e3 * setting.seconds << " ms";
      }
    }
    std::cout << std::endl;
  }
}

void run_size(const at::Device& device, int64_t n, int repeats, std::ostream& csv) {
  constexpr int64_t kBatch = 8;
  constexpr int64_t kChannels = 32;
  constexpr int64_t kNsample = 32;
  constexpr int64_t kNeighbours = 16;
  constexpr double kRadius = 0.2;
  const int64_t npoint = n / 4;
  at::manual_seed(0);
  const auto options = at::TensorOptions().device(device);
  const at::Tensor xyz = at::rand({kBatch, n, 3}, options);
  const at::Tensor features = at::randn({kBatch, kChannels, n}, options);

  // Inputs of the later ops, checked once.
  const at::Tensor centres_idx = k::furthest_point_sample(xyz, npoint);
  check(std::get<0>(at::_unique2(centres_idx[0].cpu())).numel() == npoint, "FPS repeats an index");
  const at::Tensor new_xyz = k::gather_points(xyz.transpose(1, 2), centres_idx).transpose(1, 2);
  const auto ball = k::ball_query(new_xyz, xyz, kRadius, kNsample);
  check(ball.count.max().item<int64_t>() <= kNsample && ball.count.min().item<int64_t>() >= 1,
        "ball query counts out of [1, nsample] (every centre is one of the points)");
  const auto three = k::three_nn(xyz, new_xyz);
  check(three.idx.max().item<int64_t>() < npoint, "three_nn index out of range");
  const at::Tensor weight = 1.0 / (three.dist2 + 1e-8);
  const at::Tensor norm_weight = weight / weight.sum(-1, true);
  const at::Tensor coarse = at::randn({kBatch, kChannels, npoint}, options);
  const at::Tensor grad_gather = at::randn({kBatch, kChannels, npoint}, options);
  const at::Tensor grad_group = at::randn({kBatch, kChannels, npoint, kNsample}, options);
  const at::Tensor grad_interp = at::randn({kBatch, kChannels, n}, options);
  const k::ScatterMode mode = k::ScatterMode::kAtomic;

  const std::vector<std::pair<std::string, std::function<void()>>> ops = {
      {"furthest_point_sample", [&] { k::furthest_point_sample(xyz, npoint); }},
      {"gather_points", [&] { k::gather_points(features, centres_idx); }},
      {"ball_query", [&] { k::ball_query(new_xyz, xyz, kRadius, kNsample); }},
      {"knn", [&] { k::knn(new_xyz, xyz, kNeighbours); }},
      {"group_points", [&] { k::group_points(features, ball.idx); }},
      {"three_nn", [&] { k::three_nn(xyz, new_xyz); }},
      {"three_interpolate", [&] { k::three_interpolate(coarse, three.idx, norm_weight); }},
      {"gather_points_backward",
       [&] { k::gather_points_backward(grad_gather, centres_idx, n, mode); }},
      {"group_points_backward", [&] { k::group_points_backward(grad_group, ball.idx, n, mode); }},
      {"three_interpolate_backward",
       [&] { k::three_interpolate_backward(grad_interp, coarse, three.idx, norm_weight, mode); }},
  };
  for (const auto& [name, fn] : ops) {
    const double ms = median_ms(device, repeats, fn);
    csv << name << ',' << device.str() << ',' << kBatch << ',' << n << ",dtrain," << ms
        << std::endl;  // kept should a later row never finish
    std::cout << name << " " << device.str() << " N=" << n << ": " << ms << " ms" << std::endl;
  }
  // Each FPS kernel beside the default (the register kernel up to 8192
  // points, the chunk kernel beyond), same picks: the default's kernels
  // forced ("registers", "chunks"), the experimental on-chip settings, and
  // the experimental striped kernel ("experimental_striped_round4": one
  // block per cloud up to 8192 points, a cluster of blocks up to 65536 on
  // sm_90). A kernel that cannot take the cloud is named and left out.
  if (device.is_cuda()) {
    fps_row_if_it_runs(device, repeats, csv, xyz, npoint, centres_idx, "registers",
                       forced(k::FpsKernel::kRegisters));
    fps_row_if_it_runs(device, repeats, csv, xyz, npoint, centres_idx, "chunks",
                       forced(k::FpsKernel::kChunks));
    experimental_rows(device, repeats, csv, xyz, npoint, centres_idx);
    fps_row_if_it_runs(device, repeats, csv, xyz, npoint, centres_idx,
                       "experimental_striped_round4",
                       experimental(x::ExperimentalFps(x::FpsVariant::kStriped).round(4)));
  }
}

// The CUDA goal of the kernels issue: B = 32 clouds of 8192 points -> 1024
// picks in under 0.5 ms. Its rows, in this order, so that a kernel that
// never returns costs the rows after it only: the default ("dtrain"), then
// the usual one-block-per-cloud kernel as the baseline
// ("one_block_per_cloud", and "one_block_per_cloud_global": points and
// distances in global memory, the layout of the usual extensions), then the
// experimental settings (on_chip_variants; what the measured one timed is
// printed), then the experimental striped kernel with 1, 2 and 4 picks per
// round on 1, 2, 4 and 8 blocks per cloud
// ("experimental_striped_round<R>_cluster<C>"). A row not `required` that
// this GPU cannot run, or whose picks differ, is named and left out.
struct GoalRow {
  std::string impl;
  Sample sample;
  bool required;
};
std::vector<GoalRow> goal_rows(bool cuda) {
  std::vector<GoalRow> rows = {{"dtrain",
                                [](const at::Tensor& clouds, int64_t npoint) {
                                  return k::furthest_point_sample(clouds, npoint);
                                },
                                true}};
  if (!cuda) {
    return rows;
  }
  rows.push_back({"one_block_per_cloud", forced(k::FpsKernel::kOneBlockShared), true});
  rows.push_back({"one_block_per_cloud_global", forced(k::FpsKernel::kOneBlockGlobal), true});
  for (const ExperimentalVariant& variant : on_chip_variants()) {
    rows.push_back({variant.impl, experimental(variant.fps), false});
  }
  for (int cluster : {1, 2, 4, 8}) {
    for (int round : {1, 2, 4}) {
      rows.push_back(
          {"experimental_striped_round" + std::to_string(round) + "_cluster" +
               std::to_string(cluster),
           experimental(x::ExperimentalFps(x::FpsVariant::kStriped).round(round).cluster(cluster)),
           false});
    }
  }
  return rows;
}

// The goal's rows; with `only`, that row alone, its picks checked against
// the CPU's so that no other kernel runs on the device (for a profiler).
void run_fps_goal(const at::Device& device, int repeats, std::ostream& csv,
                  const std::string& only) {
  constexpr int64_t kBatch = 32;
  constexpr int64_t kPoints = 8192;
  constexpr int64_t kPicks = 1024;
  at::manual_seed(0);
  const at::Tensor xyz = at::rand({kBatch, kPoints, 3}, at::TensorOptions().device(device));
  const at::Tensor expected = only.empty() ? k::furthest_point_sample(xyz, kPicks)
                                           : k::furthest_point_sample(xyz.cpu(), kPicks).to(device);
  bool ran = false;
  for (const GoalRow& row : goal_rows(device.is_cuda())) {
    if (!only.empty() && row.impl != only) {
      continue;
    }
    ran = true;
    if (row.required) {
      fps_row(device, repeats, csv, xyz, kPicks, expected, row.impl, row.sample);
    } else {
      fps_row_if_it_runs(device, repeats, csv, xyz, kPicks, expected, row.impl, row.sample);
    }
    if (row.impl == "experimental_measured") {
      print_measurements();
    }
  }
  if (!ran) {
    throw std::invalid_argument("--fps-only: no FPS row '" + only + "' on " + device.str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    std::vector<at::Device> devices;
    if (options.device != "cuda") {
      devices.emplace_back(at::kCPU);
    }
    if (options.device != "cpu") {
      if (at::hasCUDA()) {
        devices.emplace_back(at::kCUDA);
      } else if (options.device == "cuda") {
        throw std::runtime_error("--device cuda: no CUDA device visible");
      } else {
        std::cout << "no CUDA device visible: CPU only" << std::endl;
      }
    }
    std::ofstream csv(options.out);
    if (!csv) {
      throw std::runtime_error("cannot write " + options.out);
    }
    csv << "op,device,B,N,impl,median_ms\n";
    std::cout << "threads: " << at::get_num_threads() << std::endl;
    for (const auto& device : devices) {
      // The goal first: it holds the kernels issue's open figure, which a
      // run stopped by its time limit must not cost.
      run_fps_goal(device, options.repeats, csv, options.fps_only);
      if (!options.fps_only.empty()) {
        continue;
      }
      for (int64_t n : options.sizes) {
        run_size(device, n, options.repeats, csv);
      }
    }
    std::cout << "wrote " << options.out << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_pointnet2_ops: " << e.what() << std::endl;
    return 1;
  }
}

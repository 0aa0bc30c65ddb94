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
// checked (shapes, index ranges, FPS without repeats) before timing. Last,
// per device, FPS at B = 32, N = 8192 -> 1024 (the CUDA goal; on CUDA also
// the one-block-per-cloud kernel for comparison).
//
//   bench_pointnet2_ops [--sizes 1024,4096,16384] [--repeats 5] [--device cpu|cuda|all]
//                       [--out pointnet2_ops.csv]
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

#include "dtrain/kernels/pointnet2.h"

#if __has_include(<ATen/cuda/CUDAContext.h>)
#include <c10/cuda/CUDAFunctions.h>
#define DTRAIN_BENCH_CAN_SYNC_CUDA 1
#endif

namespace {

namespace k = dtrain::kernels;

struct Options {
  std::vector<int64_t> sizes{1024, 4096, 16384};
  int repeats = 5;
  std::string device = "all";
  std::string out = "pointnet2_ops.csv";
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << "usage: bench_pointnet2_ops [--sizes 1024,4096,16384] [--repeats 5] "
                   "[--device cpu|cuda|all] [--out FILE.csv]\n";
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

// One FPS row for the kernel the environment forces (DTRAIN_CUDA_FPS and
// its settings) on clouds `xyz` (B, N, 3): its picks must equal `expected`
// (another kernel's: every kernel takes the same picks); then its median
// time, as impl `impl`. Throws when the picks differ or the kernel cannot
// take the clouds.
void fps_row(const at::Device& device, int repeats, std::ostream& csv, const at::Tensor& xyz,
             int64_t npoint, const at::Tensor& expected, const std::string& impl) {
  if (!at::equal(k::furthest_point_sample(xyz, npoint), expected)) {
    throw std::runtime_error("its picks differ from another kernel's");
  }
  const double ms = median_ms(device, repeats, [&] { k::furthest_point_sample(xyz, npoint); });
  csv << "furthest_point_sample," << device.str() << ',' << xyz.size(0) << ',' << xyz.size(1) << ','
      << impl << ',' << ms << std::endl;  // kept should a later row never finish
  std::cout << "furthest_point_sample " << device.str() << " B=" << xyz.size(0)
            << " N=" << xyz.size(1) << " -> " << npoint << " (" << impl << "): " << ms << " ms"
            << std::endl;
}

// fps_row where a setting this GPU refuses, or picks that differ (which the
// GPU tests report too), cost that row, named, not the rest of the benchmark.
void fps_row_if_it_runs(const at::Device& device, int repeats, std::ostream& csv,
                        const at::Tensor& xyz, int64_t npoint, const at::Tensor& expected,
                        const std::string& impl) {
  try {
    fps_row(device, repeats, csv, xyz, npoint, expected, impl);
  } catch (const std::exception& e) {
    std::cout << "furthest_point_sample B=" << xyz.size(0) << " N=" << xyz.size(1) << ": no "
              << impl << " row (" << e.what() << ")" << std::endl;
  }
}

// The settings of the kernels that keep a thread's points in registers
// that the benchmark times beside the default: the register kernel's way for
// a thread to find its furthest point (Note [A lane's furthest point by a
// tree]) and picks per barrier (Note [FPS on registers in rounds of picks],
// which take the tree), and the leader kernel on 1024 and 512 threads, and
// in rounds of two and four picks on 512 (Note [FPS with one picking warp]).
struct RegisterVariant {
  const char* path;     // DTRAIN_CUDA_FPS
  const char* lane;     // DTRAIN_CUDA_FPS_LANE
  const char* round;    // DTRAIN_CUDA_FPS_ROUND
  const char* threads;  // DTRAIN_CUDA_FPS_THREADS
  const char* impl;     // the CSV's impl column
};
constexpr RegisterVariant kRegisterVariants[] = {
    {"registers", "pass", "1", "", "registers"},
    {"registers", "tree", "1", "", "registers_lane_tree"},
    {"registers", "tree", "2", "", "registers_round2_lane_tree"},
    {"registers", "tree", "4", "", "registers_round4_lane_tree"},
    {"leader", "", "", "1024", "leader_1024"},
    {"leader", "", "", "512", "leader_512"},
    {"leader", "", "2", "512", "leader_512_round2"},
    {"leader", "", "4", "512", "leader_512_round4"},
};

// Forces a variant's settings for its lifetime.
class ForcedRegisters {
 public:
  explicit ForcedRegisters(const RegisterVariant& variant) {
    setenv("DTRAIN_CUDA_FPS", variant.path, 1);
    setenv("DTRAIN_CUDA_FPS_LANE", variant.lane, 1);
    setenv("DTRAIN_CUDA_FPS_ROUND", variant.round, 1);
    setenv("DTRAIN_CUDA_FPS_THREADS", variant.threads, 1);
  }
  ~ForcedRegisters() {
    unsetenv("DTRAIN_CUDA_FPS");
    unsetenv("DTRAIN_CUDA_FPS_LANE");
    unsetenv("DTRAIN_CUDA_FPS_ROUND");
    unsetenv("DTRAIN_CUDA_FPS_THREADS");
  }
  ForcedRegisters(const ForcedRegisters&) = delete;
  ForcedRegisters& operator=(const ForcedRegisters&) = delete;
};

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
  // Each spatial FPS kernel beside the default the plan chose (the
  // register kernel up to 8192 points, the striped kernel's clusters up to
  // 65536 on sm_90, the chunk kernel beyond): the register kernel's
  // variants (kRegisterVariants), "striped_round4" (one block per cloud up
  // to 8192 points, a cluster of blocks up to 65536 on sm_90) and "chunks",
  // same picks. A kernel that cannot take the cloud is named and left out.
  if (device.is_cuda()) {
    for (const RegisterVariant& variant : kRegisterVariants) {
      const ForcedRegisters forced(variant);
      fps_row_if_it_runs(device, repeats, csv, xyz, npoint, centres_idx, variant.impl);
    }
    for (const auto& [kernel, impl] :
         {std::pair{"striped", "striped_round4"}, std::pair{"chunks", "chunks"}}) {
      setenv("DTRAIN_CUDA_FPS", kernel, 1);
      fps_row_if_it_runs(device, repeats, csv, xyz, npoint, centres_idx, impl);
    }
    unsetenv("DTRAIN_CUDA_FPS");
  }
}

// The CUDA goal of the kernels issue: B = 32 clouds of 8192 points -> 1024
// picks in under 0.5 ms. In this order, so that a kernel that never returns
// costs the rows after it only: the usual one-block-per-cloud kernel
// (forced with DTRAIN_CUDA_FPS=shared, impl "one_block_per_cloud"; with
// DTRAIN_CUDA_FPS=global, "one_block_per_cloud_global"), the variants of
// the kernels on registers (kRegisterVariants, the leader's last), the
// default ("dtrain": the fastest of those variants, measured on its first
// call, Note [Choosing the CUDA FPS kernel by timing it]; what it measured
// is printed), and the striped kernel with 1, 2 and 4 picks per round on 1,
// 2, 4 and 8 blocks per cloud (impl "striped_round<R>_cluster<C>":
// DTRAIN_CUDA_FPS=striped, DTRAIN_CUDA_FPS_ROUND, DTRAIN_CUDA_FPS_CLUSTER).
// Every row's picks equal the register kernel's (on the CPU, the default's);
// a setting this GPU cannot run, or whose picks differ, is named and left
// out.
void run_fps_goal(const at::Device& device, int repeats, std::ostream& csv) {
  constexpr int64_t kBatch = 32;
  constexpr int64_t kPoints = 8192;
  constexpr int64_t kPicks = 1024;
  at::manual_seed(0);
  const at::Tensor xyz = at::rand({kBatch, kPoints, 3}, at::TensorOptions().device(device));
  auto row = [&](const at::Tensor& expected, const std::string& impl) {
    fps_row(device, repeats, csv, xyz, kPicks, expected, impl);
  };
  if (!device.is_cuda()) {
    row(k::furthest_point_sample(xyz, kPicks), "dtrain");
    return;
  }
  setenv("DTRAIN_CUDA_FPS", "registers", 1);
  const at::Tensor expected = k::furthest_point_sample(xyz, kPicks);
  setenv("DTRAIN_CUDA_FPS", "shared", 1);
  row(expected, "one_block_per_cloud");
  // The layout of the usual extension kernels: points and running
  // distances in global memory.
  setenv("DTRAIN_CUDA_FPS", "global", 1);
  row(expected, "one_block_per_cloud_global");
  unsetenv("DTRAIN_CUDA_FPS");
  for (const RegisterVariant& variant : kRegisterVariants) {
    const ForcedRegisters forced(variant);
    fps_row_if_it_runs(device, repeats, csv, xyz, kPicks, expected, variant.impl);
  }
  row(expected, "dtrain");
  for (const std::string& line : k::furthest_point_sample_cuda_choices()) {
    std::cout << "FPS kernel measured for " << line << std::endl;
  }
  // The striped kernel (Note [FPS in rounds of independent picks], Note
  // [FPS on a cluster of blocks]); the plan takes it beyond 8192 points.
  setenv("DTRAIN_CUDA_FPS", "striped", 1);
  for (const char* cluster : {"1", "2", "4", "8"}) {
    setenv("DTRAIN_CUDA_FPS_CLUSTER", cluster, 1);
    for (const char* round : {"1", "2", "4"}) {
      setenv("DTRAIN_CUDA_FPS_ROUND", round, 1);
      fps_row_if_it_runs(device, repeats, csv, xyz, kPicks, expected,
                         std::string("striped_round") + round + "_cluster" + cluster);
    }
  }
  unsetenv("DTRAIN_CUDA_FPS_CLUSTER");
  unsetenv("DTRAIN_CUDA_FPS_ROUND");
  unsetenv("DTRAIN_CUDA_FPS");
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
      run_fps_goal(device, options.repeats, csv);
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

// Training step time of dtrain's PointNet++ classifier (dtrain::models::
// PointNet2Cls on dtrain::kernels, all C++), or with --model partseg of its
// part segmentation network (PointNet2PartSeg: 16 categories, 50 parts, a
// part label per point). benchmarks/peers/
// pointnet2_train_torch.py is the same model and step in Python PyTorch,
// with pure-PyTorch point ops (what users write without a kernel package)
// and with dtrain's ops loaded as torch.ops.dtrain.*;
// benchmarks/run_pointnet2_train.sh runs both in rounds and writes the
// comparison.
//
//   bench_pointnet2_train --preset ssg-lite --batch-size 16 --points 512 --csv out.csv
//
// --layout contiguous runs the set abstractions channel-major (the layout of
// Python PointNet++ code) instead of channels-last; for partseg,
// --propagation-layout channel-major runs the feature propagations and the
// head as Conv1d stacks over (B, C, N) instead of on rows; --norm-relu separate
// runs LibTorch's batch norm and ReLU where the fused kernel would serve;
// --device cuda times the step on the GPU; --amp bf16 runs the forward and
// the loss under bf16 autocast (dtrain::amp::AutocastGuard), --amp fp16
// (CUDA) under fp16 autocast with loss scaling (dtrain::amp::GradScaler),
// as torch.amp users write it. Each shows in the row's impl: dtrain_cpp,
// then _partseg, _cuda, _contiguous, _channel_major_propagation,
// _separate_norm_relu, _bf16 or _fp16.
//
// A step: zero_grad, forward + cross-entropy, backward, Adam step, on one
// fixed batch of clouds uniform in [-1, 1]^3 (seeded, so every step and both
// programs see clouds of the same density). After --warmup untimed steps,
// --steps steps are timed one by one; the row holds their median. Rows are
// appended, so rounds of a run collect in one file. The loss must stay
// finite.
//
// Like dtrain's training apps, the benchmark keeps freed host memory in the
// process (dtrain::util::set_up_process, retain_freed_host_memory):
// without it, every step's large activations come back from the kernel as
// fresh pages (ssg-lite, batch 16 x 512 points: 124 ms a step against 82 ms
// with it, same machine, minutes apart). The Python peer runs with glibc's
// defaults, as PyTorch users do.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/models/pointnet2_part_seg.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/memory.h"
#include "dtrain/util/process_setup.h"
#include "median_step.h"

namespace {

struct Options {
  std::string model = "cls";
  std::string preset = "ssg-lite";
  int64_t batch_size = 16;
  int64_t points = 512;
  int64_t classes = 10;
  int warmup = 3;
  int steps = 10;
  int threads = 1;
  std::string layout = "channels-last";
  std::string propagation_layout = "rows";
  std::string norm_relu = "fused";
  std::string device = "cpu";
  std::string amp = "off";
  std::string csv = "out/bench_pointnet2_train.csv";
};

// Set abstraction layers in the options' layout and batch norm + ReLU.
std::vector<dtrain::models::SetAbstractionOptions> in_layout(
    std::vector<dtrain::models::SetAbstractionOptions> layers, const Options& o) {
  for (auto& layer : layers) {
    layer.channels_last(o.layout == "channels-last");
    layer.fused_norm_relu(o.norm_relu == "fused");
  }
  return layers;
}

constexpr int64_t kParts = 50;       // ShapeNet-Part's
constexpr int64_t kCategories = 16;  // ShapeNet-Part's

// The network and one fixed batch for it: the step's loss from the model.
struct Workload {
  std::shared_ptr<torch::nn::Module> module;
  std::function<at::Tensor()> loss;
};

Workload make_workload(const Options& o, const c10::Device& device) {
  const at::Tensor points = (at::rand({o.batch_size, o.points, 3}) * 2 - 1).to(device);
  if (o.model == "partseg") {
    // An unknown preset is named by pointnet2_part_seg_preset, with the known ones.
    auto options = dtrain::models::pointnet2_part_seg_preset(o.preset, kParts, kCategories);
    options.layers(in_layout(options.layers(), o))
        .channels_last(o.propagation_layout == "rows")
        .fused_norm_relu(o.norm_relu == "fused");
    dtrain::models::PointNet2PartSeg model(options);
    model->to(device);
    const at::Tensor categories = at::randint(0, kCategories, {o.batch_size}, at::kLong).to(device);
    const at::Tensor labels =
        at::randint(0, kParts, {o.batch_size, o.points}, at::kLong).to(device);
    return {model.ptr(), [=]() mutable {
              return torch::nn::functional::cross_entropy(model(points, categories), labels);
            }};
  }
  auto options = dtrain::models::pointnet2_cls_preset(o.preset, o.classes);
  options.layers(in_layout(options.layers(), o));
  dtrain::models::PointNet2Cls model(options);
  model->to(device);
  const at::Tensor labels = at::randint(0, o.classes, {o.batch_size}, at::kLong).to(device);
  return {model.ptr(),
          [=]() mutable { return torch::nn::functional::cross_entropy(model(points), labels); }};
}

int run(const Options& o) {
  at::set_num_threads(o.threads);
  at::manual_seed(0);
  dtrain::train::CsvWriter csv(o.csv,
                               {"impl", "preset", "batch_size", "points", "threads", "steps",
                                "step_ms_median", "samples_per_s", "peak_rss_mb"},
                               dtrain::train::CsvWriter::Mode::kAppend);
  const c10::Device device(o.device == "cuda" ? c10::kCUDA : c10::kCPU);
  DTRAIN_CHECK(!device.is_cuda() || at::hasCUDA(), "--device cuda: no CUDA device is visible");
  DTRAIN_CHECK(o.amp != "fp16" || device.is_cuda(), "--amp fp16 needs --device cuda");
  const Workload workload = make_workload(o, device);
  torch::optim::Adam optimizer(workload.module->parameters(), torch::optim::AdamOptions(1e-3));
  const std::string impl = std::string("dtrain_cpp") + (o.model == "partseg" ? "_partseg" : "") +
                           (device.is_cuda() ? "_cuda" : "") +
                           (o.layout == "contiguous" ? "_contiguous" : "") +
                           (o.model == "partseg" && o.propagation_layout == "channel-major"
                                ? "_channel_major_propagation"
                                : "") +
                           (o.norm_relu == "separate" ? "_separate_norm_relu" : "") +
                           (o.amp != "off" ? "_" + o.amp : "");
  // Scales only under fp16 (a disabled scaler passes the loss and step through).
  dtrain::amp::GradScaler scaler(dtrain::amp::GradScalerOptions().enabled(o.amp == "fp16"));

  const double median = dtrain::bench::median_step_ms(o.warmup, o.steps, [&](int i) {
    optimizer.zero_grad();
    at::Tensor loss;
    {
      std::optional<dtrain::amp::AutocastGuard> autocast;
      if (o.amp != "off") {
        autocast.emplace(dtrain::amp::AutocastOptions(device.type())
                             .dtype(o.amp == "bf16" ? at::kBFloat16 : at::kHalf));
      }
      loss = workload.loss();
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    const double value = loss.item<double>();  // also waits for the step to finish
    DTRAIN_CHECK(std::isfinite(value), "bench_pointnet2_train: loss is ", value, " at step ", i);
  });
  const double samples_per_s = 1000.0 * static_cast<double>(o.batch_size) / median;
  const double peak_mb = static_cast<double>(dtrain::util::peak_rss_bytes()) / (1 << 20);
  spdlog::info(
      "dtrain (C++) {} {} batch {} x {} points: {:.1f} ms/step, {:.1f} clouds/s ({}, {}, {} batch "
      "norm + ReLU, amp {})",
      o.model, o.preset, o.batch_size, o.points, median, samples_per_s, o.device, o.layout,
      o.norm_relu, o.amp);
  csv.write_row({impl, o.preset, o.batch_size, o.points, int64_t{o.threads}, int64_t{o.steps},
                 median, samples_per_s, peak_mb});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"PointNet++ training step (dtrain, C++)", "bench_pointnet2_train"};
  Options o;
  app.add_option("--model", o.model, "the classifier, or part segmentation")
      ->check(CLI::IsMember({"cls", "partseg"}))
      ->capture_default_str();
  app.add_option("--preset", o.preset, "a preset of the model (partseg: ssg or ssg-lite)")
      ->check(CLI::IsMember(dtrain::models::pointnet2_cls_preset_names()))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size)
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--points", o.points, "points per cloud")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  dtrain::bench::add_step_flags(app, o.warmup, o.steps, o.threads);
  app.add_option("--layout", o.layout, "the set abstractions' layout")
      ->check(CLI::IsMember({"channels-last", "contiguous"}))
      ->capture_default_str();
  app.add_option("--propagation-layout", o.propagation_layout,
                 "partseg: the feature propagations and head on rows of channels, or as "
                 "Conv1d stacks over (B, C, N)")
      ->check(CLI::IsMember({"rows", "channel-major"}))
      ->capture_default_str();
  app.add_option("--norm-relu", o.norm_relu,
                 "the set abstractions' batch norm + ReLU: fused where the kernel takes it, "
                 "or LibTorch's two ops")
      ->check(CLI::IsMember({"fused", "separate"}))
      ->capture_default_str();
  app.add_option("--device", o.device)
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--amp", o.amp,
                 "off; bf16: forward and loss under bf16 autocast; fp16 (CUDA): under fp16 "
                 "autocast, with loss scaling")
      ->check(CLI::IsMember({"off", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--csv", o.csv, "report (rows appended)")->capture_default_str();
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return run(o); });
}

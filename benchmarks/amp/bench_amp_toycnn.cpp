// Training step time and peak memory of the toy CNN with and without
// autocast, on the CPU (bf16) or a CUDA device (bf16, or fp16 with dtrain's
// GradScaler as torch.amp does): one configuration per process, so that the
// process's peak RSS belongs to that configuration alone.
// benchmarks/run_amp.sh runs every CPU configuration here and in
// benchmarks/peers/amp_toycnn_torch.py (the same loop with torch.autocast)
// and merges the rows; tests/gpu/run_gpu_checks.sh runs both on CUDA.
//
//   bench_amp_toycnn --precision bf16 --batch-size 256 --csv out.csv
//   bench_amp_toycnn --device cuda --precision fp16 --csv out.csv
//
// A step: zero_grad, forward (under the guard) + cross-entropy, backward,
// SGD(momentum) step, on random inputs of shape (B, 1, 32, 32). After
// --warmup untimed steps, --steps steps are timed one by one; the row holds
// their median, the peak RSS (getrusage), the RSS growth over the set-up
// (model, optimizer, inputs), i.e. what training itself allocated, and on
// CUDA the peak memory of the device's allocator over warmup and timed steps
// (blank on the CPU, whose peak is the RSS).
// Checked, not just timed: the loss must be finite and, under autocast, the
// logits must come out in the autocast dtype.
#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <optional>
#include <string>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/device_memory.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/memory.h"
#include "dtrain/util/process_setup.h"
#include "median_step.h"

namespace {

struct Options {
  std::string device = "cpu";      // "cpu" or "cuda"
  std::string precision = "bf16";  // "off", "bf16" or "fp16" (cuda only)
  int64_t batch_size = 256;
  int warmup = 10;
  int steps = 50;
  int threads = 1;
  std::string csv = "out/bench_amp_toycnn.csv";
};

double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

// Flag combinations the run cannot honour, as usage errors (exit 2, as a bad
// flag): CPU autocast here is bf16 only (fp16 on the CPU is slow emulation
// and torch.amp's GradScaler does not apply there), and --device cuda needs
// a visible device.
void check_device_flags(const Options& o) {
  if (o.precision == "fp16" && o.device != "cuda") {
    throw CLI::ValidationError("--precision",
                               "fp16 needs --device cuda (on the CPU, use bf16 or off)");
  }
  if (o.device == "cuda" && !at::hasCUDA()) {
    throw CLI::ValidationError("--device", "cuda: no CUDA device is visible");
  }
}

at::ScalarType logits_dtype(const std::string& precision) {
  if (precision == "bf16") {
    return at::kBFloat16;
  }
  return precision == "fp16" ? at::kHalf : at::kFloat;
}

int run(const Options& o) {
  at::set_num_threads(o.threads);
  at::manual_seed(0);
  const c10::Device device(o.device == "cuda" ? c10::Device(c10::kCUDA, 0)
                                              : c10::Device(c10::kCPU));
  const bool autocast_on = o.precision != "off";
  const at::ScalarType expected = logits_dtype(o.precision);
  dtrain::train::CsvWriter csv(
      o.csv, {"impl", "device", "precision", "batch_size", "threads", "steps", "step_ms_median",
              "samples_per_s", "peak_rss_mb", "train_rss_growth_mb", "peak_device_mb"});
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  // Drawn on the CPU and moved, so every device trains on the same numbers.
  const at::Tensor x = at::randn({o.batch_size, 1, 32, 32}).to(device);
  const at::Tensor y =
      at::randint(0, 10, {o.batch_size}, at::TensorOptions().dtype(at::kLong)).to(device);
  // fp16's narrow range needs loss scaling; a disabled scaler passes through.
  dtrain::amp::GradScaler scaler(dtrain::amp::GradScalerOptions().enabled(o.precision == "fp16"));
  const auto autocast = dtrain::amp::AutocastOptions(device.type())
                            .dtype(autocast_on ? std::optional(expected) : std::nullopt)
                            .enabled(autocast_on);
  // Asynchronous device work must be finished before a clock is read.
  const auto synchronize = [&] {
    if (device.is_cuda()) {
      at::accelerator::synchronizeDevice(device.index());
    }
  };
  synchronize();
  const std::int64_t rss_after_setup = dtrain::util::current_rss_bytes();
  dtrain::util::reset_peak_device_memory(device);

  const double median = dtrain::bench::median_step_ms(o.warmup, o.steps, [&](int i) {
    optimizer.zero_grad();
    at::Tensor loss;
    {
      dtrain::amp::AutocastGuard guard(autocast);
      const at::Tensor logits = model(x);
      DTRAIN_CHECK(logits.scalar_type() == expected, "bench_amp_toycnn: logits came out in ",
                   logits.scalar_type(), " with --precision ", o.precision);
      loss = torch::nn::functional::cross_entropy(logits, y);
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    const double value = loss.item<double>();
    synchronize();  // all of the step's device work, not only what the loss's read waited for
    DTRAIN_CHECK(std::isfinite(value), "bench_amp_toycnn: loss is ", value, " at step ", i);
  });
  const std::int64_t peak = dtrain::util::peak_rss_bytes();
  const double samples_per_s = 1000.0 * static_cast<double>(o.batch_size) / median;
  const double device_mb = dtrain::util::peak_device_mb(device);
  spdlog::info("dtrain {} {} batch {}: {:.2f} ms/step, {:.0f} samples/s, peak RSS {:.0f} MiB{}",
               o.device, o.precision, o.batch_size, median, samples_per_s, mib(peak),
               device.is_cuda() ? fmt::format(", peak GPU {:.1f} MiB", device_mb) : "");
  csv.write_row({std::string("dtrain"), o.device, o.precision, o.batch_size, int64_t{o.threads},
                 int64_t{o.steps}, median, samples_per_s, mib(peak), mib(peak - rss_after_setup),
                 device.is_cuda() ? dtrain::train::CsvWriter::Cell(device_mb)
                                  : dtrain::train::CsvWriter::Cell(std::string())});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // dtrain's logging and crash traces; malloc keeps glibc's settings.
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  CLI::App app{"Toy CNN training step with and without autocast (CPU bf16; CUDA bf16 or fp16)",
               "bench_amp_toycnn"};
  Options o;
  app.add_option("--device", o.device, "cpu or cuda (the first visible device)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "off (fp32), bf16 (autocast) or fp16 (autocast + GradScaler; cuda only)")
      ->check(CLI::IsMember({"off", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size)
      ->check(dtrain::util::positive())
      ->capture_default_str();
  dtrain::bench::add_step_flags(app, o.warmup, o.steps, o.threads);
  app.add_option("--csv", o.csv, "one-row report")->capture_default_str();
  app.callback([&] { check_device_flags(o); });
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return run(o); });
}

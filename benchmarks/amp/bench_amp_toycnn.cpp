// Training step time and peak memory of the toy CNN with and without
// autocast: one configuration per process, so that the process's peak RSS
// belongs to that configuration alone. benchmarks/run_amp.sh runs every
// configuration here and in benchmarks/peers/amp_toycnn_torch.py (the same
// loop with torch.autocast) and merges the rows.
//
//   bench_amp_toycnn --precision bf16 --batch-size 256 --csv out.csv
//
// A step: zero_grad, forward (under the guard) + cross-entropy, backward,
// SGD(momentum) step, on random inputs of shape (B, 1, 32, 32). After
// --warmup untimed steps, --steps steps are timed one by one; the row holds
// their median and the peak RSS (getrusage) and the RSS growth over the
// set-up (model, optimizer, inputs), i.e. what training itself allocated.
// Checked, not just timed: the loss must be finite and, under bf16, the
// logits must come out in bfloat16.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include <cmath>

#include "dtrain/amp/autocast.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/memory.h"
#include "median_step.h"

namespace {

struct Options {
  std::string precision = "bf16";  // "bf16" or "off"
  int64_t batch_size = 256;
  int warmup = 10;
  int steps = 50;
  int threads = 1;
  std::string csv = "out/bench_amp_toycnn.csv";
};

double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

int run(const Options& o) {
  at::set_num_threads(o.threads);
  at::manual_seed(0);
  const bool bf16 = o.precision == "bf16";
  dtrain::train::CsvWriter csv(
      o.csv, {"impl", "device", "precision", "batch_size", "threads", "steps", "step_ms_median",
              "samples_per_s", "peak_rss_mb", "train_rss_growth_mb"});
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const at::Tensor x = at::randn({o.batch_size, 1, 32, 32});
  const at::Tensor y = at::randint(0, 10, {o.batch_size}, at::TensorOptions().dtype(at::kLong));
  const std::int64_t rss_after_setup = dtrain::util::current_rss_bytes();

  const double median = dtrain::bench::median_step_ms(o.warmup, o.steps, [&](int i) {
    optimizer.zero_grad();
    at::Tensor loss;
    {
      dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCPU).enabled(bf16));
      const at::Tensor logits = model(x);
      DTRAIN_CHECK(logits.scalar_type() == (bf16 ? at::kBFloat16 : at::kFloat),
                   "bench_amp_toycnn: logits came out in ", logits.scalar_type(),
                   " with --precision ", o.precision);
      loss = torch::nn::functional::cross_entropy(logits, y);
    }
    loss.backward();
    optimizer.step();
    const double value = loss.item<double>();  // also waits for the step to finish
    DTRAIN_CHECK(std::isfinite(value), "bench_amp_toycnn: loss is ", value, " at step ", i);
  });
  const std::int64_t peak = dtrain::util::peak_rss_bytes();
  const double samples_per_s = 1000.0 * static_cast<double>(o.batch_size) / median;
  spdlog::info("dtrain cpu {} batch {}: {:.2f} ms/step, {:.0f} samples/s, peak RSS {:.0f} MiB",
               o.precision, o.batch_size, median, samples_per_s, mib(peak));
  csv.write_row({std::string("dtrain"), std::string("cpu"), o.precision, o.batch_size,
                 int64_t{o.threads}, int64_t{o.steps}, median, samples_per_s, mib(peak),
                 mib(peak - rss_after_setup)});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Toy CNN training step with and without CPU bf16 autocast", "bench_amp_toycnn"};
  Options o;
  app.add_option("--precision", o.precision, "bf16 (autocast) or off (fp32)")
      ->check(CLI::IsMember({"off", "bf16"}))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size)
      ->check(dtrain::util::positive())
      ->capture_default_str();
  dtrain::bench::add_step_flags(app, o.warmup, o.steps, o.threads);
  app.add_option("--csv", o.csv, "one-row report")->capture_default_str();
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return run(o); });
}
